package main

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// mappingScript is what the scripted upstream of TestOpenAIGateway_Mapping answers,
// keyed by each case's question.
var mappingScript = script(
	`{"user": "loop: what is ACME trading at?", "round": 1,
	  "tool_calls": [{"id": "call_q", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"}]}`,
	`{"user": "loop: what is ACME trading at?", "round": 2,
	  "content": "ACME trades at 182.50 USD. Questions: ir@acme.example"}`,
	`{"user": "enrichments: who am I?", "echo_system": true}`,
	`{"user": "trade: buy 100 ACME", "round": 1,
	  "tool_calls": [{"id": "call_t", "name": "place_trade", "arguments": "{\"symbol\":\"ACME\",\"amount\":18250}"}]}`,
	`{"user": "parallel: ACME and MSFT?", "round": 1, "tool_calls": [
	   {"id": "call_a", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"},
	   {"id": "call_m", "name": "get_quote", "arguments": "{\"symbol\":\"MSFT\"}"}]}`,
	`{"user": "parallel: ACME and MSFT?", "round": 2, "content": "ACME 182.50, MSFT 410.00"}`,
	`{"user": "denied: ACME, HALTED and a wipe", "round": 1, "content": "Let me look.", "tool_calls": [
	   {"id": "call_1", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"},
	   {"id": "call_2", "name": "get_quote", "arguments": "{\"symbol\":\"HALTED\"}"},
	   {"id": "call_3", "name": "delete_account", "arguments": "{\"user\":\"everyone\"}"}]}`,
	`{"user": "denied: ACME, HALTED and a wipe", "round": 2, "content": "ACME trades at 182.50 USD."}`,
	`{"user": "held: ACME and HELD", "round": 1, "tool_calls": [
	   {"id": "call_ha", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"},
	   {"id": "call_hh", "name": "get_quote", "arguments": "{\"symbol\":\"HELD\"}"}]}`,
	`{"user": "all held: HELD", "round": 1,
	  "tool_calls": [{"id": "call_h1", "name": "get_quote", "arguments": "{\"symbol\":\"HELD\"}"}]}`,
	`{"user": "all denied: HALTED", "round": 1,
	  "tool_calls": [{"id": "call_h", "name": "get_quote", "arguments": "{\"symbol\":\"HALTED\"}"}]}`,
	`{"user": "two rounds: quote then buy", "round": 1,
	  "tool_calls": [{"id": "call_r1", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"}]}`,
	`{"user": "two rounds: quote then buy", "round": 2,
	  "tool_calls": [{"id": "call_r2", "name": "place_trade", "arguments": "{\"symbol\":\"ACME\",\"amount\":500}"}]}`,
	`{"user": "hidden: ACME and HIDDEN", "round": 1, "tool_calls": [
	   {"id": "call_x", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"},
	   {"id": "call_y", "name": "get_quote", "arguments": "{\"symbol\":\"HIDDEN\"}"}]}`,
	`{"user": "retry: ACME then MSFT", "round": 1,
	  "tool_calls": [{"id": "call_a1", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"}]}`,
	`{"user": "retry: ACME then MSFT", "round": 2,
	  "tool_calls": [{"id": "call_m1", "name": "get_quote", "arguments": "{\"symbol\":\"MSFT\"}"}]}`,
	`{"user": "retry: ACME then MSFT", "round": 3, "content": "ACME 182.50, MSFT 410.00"}`,
	`{"user": "arguments: broken", "round": 1,
	  "tool_calls": [{"id": "call_b", "name": "get_quote", "arguments": "{\"symbol\": ACME"}]}`,
)

// mappingHooks add, to the example's hooks, a short circuit, an optional after_planning
// hook that removes steps, and a guard.
var mappingHooks = map[string]string{
	"hooks/05-ping.yaml": `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: ping}
hooks:
  - name: ping
    stage: before_planning
    when: request == 'ping'
    steps:
      - short_circuit: {response: "'pong'"}
`,
	"hooks/15-hidden.yaml": `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: hidden}
hooks:
  - name: hidden-symbols
    stage: after_planning
    steps:
      - plan.remove_steps: {where: "step.metadata.parameters.symbol == 'HIDDEN'"}
`,
	"hooks/25-halted.yaml": `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: halted}
guards:
  policy_revision: trade-limits-v1
  rules:
    - name: halted
      operation: tool_call
      deny_if: "call.capability == 'stock_quote' && call.parameters.symbol == 'HALTED'"
      code: symbol_halted
      reason: trading in this symbol is halted
    - name: held-symbol
      operation: tool_call
      effect: require_approval
      deny_if: "call.capability == 'stock_quote' && call.parameters.symbol == 'HELD'"
      code: symbol_held
      reason: quotes of this symbol need an approval
`,
}

var quotes = map[string]string{"ACME": `{"price":182.5,"currency":"USD"}`, "MSFT": `{"price":410,"currency":"USD"}`}

// TestOpenAIGateway_Mapping drives the gateway with the official Go client through
// every stage mapping: a stock agent loop (tools run on the client), enrichments, a
// short circuit, a rejected round, parallel calls, withheld calls, a second round
// rejected, a step removed by an optional hook and invalid arguments.
func TestOpenAIGateway_Mapping(t *testing.T) {
	g := startGateway(t, mappingScript, "", mappingHooks)

	t.Run("agent loop: allowed round, tools on the client, answer redacted", func(t *testing.T) {
		t.Parallel()
		params := ask("loop: what is ACME trading at?")
		params.Metadata = shared.Metadata{"tenant": "acme"}
		c, id := g.complete(t, params)
		msg := c.Choices[0].Message
		if c.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_quote" ||
			issued(msg.ToolCalls[0].ID) != "1-1" || msg.ToolCalls[0].Function.Arguments != `{"symbol":"ACME"}` {
			t.Fatalf("round 1 = %+v", c.Choices[0])
		}
		if !strings.HasPrefix(id, "oai-") {
			t.Errorf("derived request id %q", id)
		}
		runTools(&params, c, quotes)
		c, id2 := g.complete(t, params)
		if got := c.Choices[0].Message.Content; got != "ACME trades at 182.50 USD. Questions: [REDACTED]" || c.Choices[0].FinishReason != "stop" {
			t.Errorf("answer = %q (%s)", got, c.Choices[0].FinishReason)
		}
		if id2 != id {
			t.Errorf("round 2 has request id %q, round 1 %q", id2, id)
		}
		rec := g.record(t, id)
		want := []string{"ping@before_planning:skipped", "tenant-context@before_planning:succeeded", "hidden-symbols@after_planning:succeeded",
			"allowed-operations@after_planning:succeeded", "pii-redaction@after_synthesis:succeeded"}
		if rec.Status != "succeeded" || rec.Lifecycle != "completed" || !slices.Equal(rec.hooks(), want) ||
			rec.FinalResponse != "ACME trades at 182.50 USD. Questions: [REDACTED]" {
			t.Errorf("record: %s %s %v %q", rec.Status, rec.Lifecycle, rec.hooks(), rec.FinalResponse)
		}
		if len(rec.Phases) != 1 || len(rec.Phases[0].Plan.Steps) != 1 || len(rec.Phases[0].Results) != 1 {
			t.Fatalf("record phases = %+v", rec.Phases)
		}
		if got := rec.operations(); !slices.Equal(got, []string{"step-1-1:allow>succeeded"}) {
			t.Errorf("record operations = %v, want the check and the client's finish", got)
		}
		step := rec.Phases[0].Plan.Steps[0]
		if step.StepID != "step-1-1" || step.AgentName != "stock-service" || step.Metadata["capability"] != "stock_quote" ||
			step.Metadata["tool_call_id"] != msg.ToolCalls[0].ID || rec.Phases[0].Results[0].StepID != "step-1-1" {
			t.Errorf("phase 1 = %+v", rec.Phases[0])
		}
	})

	t.Run("enrichments reach the model as a system message", func(t *testing.T) {
		t.Parallel()
		params := ask("enrichments: who am I?")
		params.Messages = append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a stock assistant.")}, params.Messages...)
		params.Metadata = shared.Metadata{"tenant": "acme"}
		c, _ := g.complete(t, params)
		if got := c.Choices[0].Message.Content; got != "You are a stock assistant.\n<agent_memory>\nTenant: acme\n</agent_memory>\n" {
			t.Errorf("the model saw the system messages %q", got)
		}
	})

	t.Run("a short circuit is answered without the upstream", func(t *testing.T) {
		t.Parallel()
		c, id := g.complete(t, ask("ping"))
		if c.Choices[0].Message.Content != "pong" || c.Choices[0].FinishReason != "stop" {
			t.Errorf("answer = %+v", c.Choices[0])
		}
		if rec := g.record(t, id); rec.Lifecycle != "completed" || rec.FinalResponse != "pong" {
			t.Errorf("record: %s %q", rec.Lifecycle, rec.FinalResponse)
		}
	})

	t.Run("a round the allow-list rejects is refused", func(t *testing.T) {
		t.Parallel()
		c, id := g.complete(t, ask("trade: buy 100 ACME"))
		msg := c.Choices[0].Message
		if c.Choices[0].FinishReason != "stop" || len(msg.ToolCalls) != 0 || !strings.Contains(msg.Content, "refused by policy") {
			t.Errorf("answer = %+v", c.Choices[0])
		}
		for _, internal := range []string{"call_t", "18250", "allowed-operations", "capability_not_allowed", "acme"} {
			if strings.Contains(msg.Content, internal) {
				t.Errorf("the refusal names %q: %q", internal, msg.Content)
			}
		}
		rec := g.record(t, id)
		if rec.Status != "failed" || rec.Lifecycle != "failed" || len(rec.Phases) != 0 {
			t.Errorf("record: %s %s %d phases", rec.Status, rec.Lifecycle, len(rec.Phases))
		}
		if len(rec.Rejections) != 1 || rec.Rejections[0].Hook != "allowed-operations" || len(rec.Rejections[0].Violations) != 1 ||
			rec.Rejections[0].Violations[0].Code != "capability_not_allowed" || !strings.Contains(msg.Content, "(decision "+rec.Rejections[0].DecisionID+")") {
			t.Errorf("the record does not keep the details under the refusal's decision id: %+v; refusal %q", rec.Rejections, msg.Content)
		}
		again, id2 := g.complete(t, ask("trade: buy 100 ACME"))
		if id2 == id || !strings.HasPrefix(id2, "oai-") || !strings.Contains(again.Choices[0].Message.Content, "refused by policy") {
			t.Errorf("the same conversation again: request %q (the first was %q), %+v", id2, id, again.Choices[0])
		}
	})

	t.Run("parallel tool calls are one phase", func(t *testing.T) {
		t.Parallel()
		params := ask("parallel: ACME and MSFT?")
		c, id := g.complete(t, params)
		if got := toolNames(c); !slices.Equal(got, []string{"1-1:get_quote", "1-2:get_quote"}) {
			t.Fatalf("round 1 calls = %v", got)
		}
		runTools(&params, c, quotes)
		if c, _ = g.complete(t, params); c.Choices[0].Message.Content != "ACME 182.50, MSFT 410.00" {
			t.Errorf("answer = %q", c.Choices[0].Message.Content)
		}
		rec := g.record(t, id)
		if len(rec.Phases) != 1 || len(rec.Phases[0].Plan.Steps) != 2 || len(rec.Phases[0].Results) != 2 ||
			rec.Phases[0].Results[1].StepID != "step-1-2" {
			t.Errorf("record phases = %+v", rec.Phases)
		}
	})

	t.Run("a denied and an unmapped call are withheld, the allowed one returned", func(t *testing.T) {
		t.Parallel()
		params := ask("denied: ACME, HALTED and a wipe")
		c, id := g.complete(t, params)
		msg := c.Choices[0].Message
		if got := toolNames(c); !slices.Equal(got, []string{"1-1:get_quote"}) || c.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("round 1 calls = %v (%s)", got, c.Choices[0].FinishReason)
		}
		for _, want := range []string{"Let me look.\n\nagentd withheld these tool calls:", "get_quote: symbol_halted: trading in this symbol is halted",
			"delete_account: tool_not_mapped"} {
			if !strings.Contains(msg.Content, want) {
				t.Errorf("content %q lacks %q", msg.Content, want)
			}
		}
		runTools(&params, c, quotes)
		if c, _ = g.complete(t, params); c.Choices[0].Message.Content != "ACME trades at 182.50 USD." {
			t.Errorf("answer = %q", c.Choices[0].Message.Content)
		}
		rec := g.record(t, id)
		if rec.Lifecycle != "completed" || len(rec.Phases) != 1 || len(rec.Phases[0].Plan.Steps) != 2 || len(rec.Phases[0].Results) != 1 ||
			rec.Phases[0].Results[0].StepID != "step-1-1" {
			t.Errorf("record: %s %+v", rec.Lifecycle, rec.Phases)
		}
		if got := rec.operations(); !slices.Equal(got, []string{"step-1-1:allow>succeeded", "step-1-2:deny:symbol_halted"}) {
			t.Errorf("record operations = %v", got)
		}
	})

	t.Run("a call held for an approval is withheld, naming the approval and its URL", func(t *testing.T) {
		t.Parallel()
		c, id := g.complete(t, ask("held: ACME and HELD"))
		msg := c.Choices[0].Message
		if got := toolNames(c); !slices.Equal(got, []string{"1-1:get_quote"}) {
			t.Fatalf("round 1 calls = %v", got)
		}
		rec := g.record(t, id)
		if ops := rec.operations(); len(ops) != 2 || ops[1] != "step-1-2:deny:approval_required" {
			t.Fatalf("record operations = %v", ops)
		}
		approval := regexp.MustCompile(`apr_[0-9a-f]{32}_1`).FindString(msg.Content)
		if approval == "" || !strings.Contains(msg.Content, "get_quote: approval_required: approval "+approval) ||
			!strings.Contains(msg.Content, "decide it at /v1/approvals/"+approval) {
			t.Errorf("content %q does not name the approval and its URL", msg.Content)
		}
	})

	t.Run("a round whose every call is held is refused naming the approval, and the request stays open", func(t *testing.T) {
		t.Parallel()
		c, id := g.complete(t, ask("all held: HELD"))
		msg := c.Choices[0].Message
		approval := regexp.MustCompile(`apr_[0-9a-f]{32}_1`).FindString(msg.Content)
		if len(msg.ToolCalls) != 0 || c.Choices[0].FinishReason != "stop" || approval == "" ||
			!strings.Contains(msg.Content, "the requested actions await an approval: "+approval+" at /v1/approvals/"+approval) {
			t.Errorf("answer = %+v", c.Choices[0])
		}
		if rec := g.record(t, id); rec.Lifecycle == "failed" || rec.operations()[0] != "step-1-1:deny:approval_required" {
			t.Errorf("record: lifecycle %s operations %v; want not failed, the hold kept", rec.Lifecycle, rec.operations())
		}
	})

	t.Run("a round whose every call is denied is refused", func(t *testing.T) {
		t.Parallel()
		c, id := g.complete(t, ask("all denied: HALTED"))
		if msg := c.Choices[0].Message; len(msg.ToolCalls) != 0 || c.Choices[0].FinishReason != "stop" ||
			!strings.Contains(msg.Content, "none of the requested actions is allowed") || strings.Contains(msg.Content, "symbol_halted") {
			t.Errorf("answer = %+v", c.Choices[0])
		}
		if rec := g.record(t, id); rec.Lifecycle != "failed" || rec.Cause != "guard_denied" || rec.operations()[0] != "step-1-1:deny:symbol_halted" {
			t.Errorf("record: lifecycle %s cause %q operations %v; want failed, guard_denied, the denial kept", rec.Lifecycle, rec.Cause, rec.operations())
		}
	})

	t.Run("the second round is rejected after the first ran", func(t *testing.T) {
		t.Parallel()
		params := ask("two rounds: quote then buy")
		c, id := g.complete(t, params)
		if got := toolNames(c); !slices.Equal(got, []string{"1-1:get_quote"}) {
			t.Fatalf("round 1 calls = %v", got)
		}
		runTools(&params, c, quotes)
		c, _ = g.complete(t, params)
		if msg := c.Choices[0].Message; len(msg.ToolCalls) != 0 || !strings.Contains(msg.Content, "refused by policy") {
			t.Errorf("round 2 answer = %+v", c.Choices[0])
		}
		rec := g.record(t, id)
		if rec.Status != "failed" || len(rec.Phases) != 1 || rec.Phases[0].Phase != 1 || len(rec.Phases[0].Results) != 1 {
			t.Errorf("record: %s %+v", rec.Status, rec.Phases)
		}
	})

	t.Run("a round sent again is reviewed again, as another attempt at its phase", func(t *testing.T) {
		t.Parallel()
		params := ask("retry: ACME then MSFT")
		c, id := g.complete(t, params)
		runTools(&params, c, quotes)
		first, _ := g.complete(t, params)
		again, _ := g.complete(t, params) // the client did not get the first answer, say
		if !slices.Equal(toolNames(first), []string{"2-1:get_quote"}) || !slices.Equal(toolNames(again), []string{"2r2-1:get_quote"}) {
			t.Fatalf("round 2 = %v, sent again %v (%q)", toolNames(first), toolNames(again), again.Choices[0].Message.Content)
		}
		runTools(&params, again, quotes)
		if c, _ = g.complete(t, params); c.Choices[0].Message.Content != "ACME 182.50, MSFT 410.00" {
			t.Errorf("answer = %+v", c.Choices[0])
		}
		rec := g.record(t, id)
		var steps []string
		for _, ph := range rec.Phases {
			steps = append(steps, ph.Plan.Steps[0].StepID)
		}
		if rec.Lifecycle != "completed" || !slices.Equal(steps, []string{"step-1-1", "step-2-1", "step-2r2-1"}) {
			t.Errorf("record: %s, phases %v", rec.Lifecycle, steps)
		}
		if got := rec.operations(); !slices.Equal(got, []string{"step-1-1:allow>succeeded", "step-2-1:allow", "step-2r2-1:allow>succeeded"}) {
			t.Errorf("record operations = %v", got)
		}
	})

	t.Run("a step an optional hook removed is not returned", func(t *testing.T) {
		t.Parallel()
		c, id := g.complete(t, ask("hidden: ACME and HIDDEN"))
		if got := toolNames(c); !slices.Equal(got, []string{"1-1:get_quote"}) || c.Choices[0].Message.Content != "" {
			t.Errorf("calls = %v, content %q", got, c.Choices[0].Message.Content)
		}
		if rec := g.record(t, id); len(rec.Phases) != 1 || len(rec.Phases[0].Plan.Steps) != 1 {
			t.Errorf("record phases = %+v", rec.Phases)
		}
	})

	t.Run("arguments that are not JSON reject the round", func(t *testing.T) {
		t.Parallel()
		c, id := g.complete(t, ask("arguments: broken"))
		if msg := c.Choices[0].Message; len(msg.ToolCalls) != 0 || !strings.Contains(msg.Content, "the requested actions were malformed") {
			t.Errorf("answer = %+v", c.Choices[0])
		}
		if rec := g.record(t, id); rec.Status != "failed" || !strings.Contains(rec.Error, "arguments are not an unambiguous JSON object") {
			t.Errorf("record: %s %q", rec.Status, rec.Error)
		}
	})

	t.Run("GET /v1/models passes through", func(t *testing.T) {
		t.Parallel()
		page, err := g.client.Models.List(context.Background())
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != "scripted-model" {
			t.Fatalf("models = %+v, %v", page, err)
		}
		m, err := g.client.Models.Get(context.Background(), "scripted-model")
		if err != nil || m.ID != "scripted-model" {
			t.Errorf("model = %+v, %v", m, err)
		}
	})

	t.Run("the request id comes from the header", func(t *testing.T) {
		t.Parallel()
		_, id := g.complete(t, ask("ping"), option.WithHeader("X-Request-Id", "conversation-42"))
		if id != "conversation-42" {
			t.Errorf("response request id %q", id)
		}
		if rec := g.record(t, "conversation-42"); rec.FinalResponse != "pong" {
			t.Errorf("record %+v", rec)
		}
	})
}

// toolNames lists a completion's tool calls as "step:function", step the part of the
// id the gateway issued after its request token (see issued).
func toolNames(c *openai.ChatCompletion) []string {
	var out []string
	for _, tc := range c.Choices[0].Message.ToolCalls {
		out = append(out, issued(tc.ID)+":"+tc.Function.Name)
	}
	return out
}

// issuedCallID is the form of the tool call ids the gateway issues:
// call_<request token>_<step id without "step-">.
var issuedCallID = regexp.MustCompile(`^call_[0-9a-f]{24}_([0-9r]+-[0-9]+)$`)

// issued returns the step part of a tool call id the gateway issued, or the id whole
// with a "!" when it is not one (the upstream's own id reached the client).
func issued(id string) string {
	if m := issuedCallID.FindStringSubmatch(id); m != nil {
		return m[1]
	}
	return "!" + id
}

var _ = http.MethodGet
