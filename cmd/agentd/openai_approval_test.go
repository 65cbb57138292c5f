package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestOpenAIGateway_HeldRoundAnsweredOnceApproved: a round whose call a rule with
// effect require_approval holds is refused naming the approval (openai-go client);
// sent again before the decision, the same conversation gets the refusal again; once
// approved, it gets exactly the approved call, under the same request, without the
// model being asked again; and the round then goes on as any other.
func TestOpenAIGateway_HeldRoundAnsweredOnceApproved(t *testing.T) {
	up, asked := heldUpstream(t)
	dir := heldConfig(t, up)
	d := startDaemonEnv(t, []string{upstreamKey}, dir)
	g := &gateway{d: d, dir: dir, upstream: up, client: newClient(d.url, "unused")}
	params := ask("what is HELD trading at?")
	c, id := g.complete(t, params)
	approval := heldApproval(t, c)
	if again, _ := g.complete(t, params); len(again.Choices[0].Message.ToolCalls) != 0 || !strings.Contains(again.Choices[0].Message.Content, approval) {
		t.Fatalf("the same conversation before the decision = %+v; want the refusal again", again.Choices[0])
	}
	if status, body := d.do(t, "POST", "/v1/approvals/"+approval, `{"decision":"approve"}`); status != 200 {
		t.Fatalf("approve: %d %s", status, body)
	}
	c, id2 := g.complete(t, params)
	wantApprovedCall(t, c, id2, id, asked)
	runTools(&params, c, map[string]string{"HELD": `{"price":1,"currency":"USD"}`})
	if c, _ = g.complete(t, params); c.Choices[0].Message.Content != "HELD trades at 1.00 USD." {
		t.Fatalf("answer = %+v", c.Choices[0])
	}
	rec := g.record(t, id)
	if rec.Lifecycle != "completed" {
		t.Errorf("record lifecycle %s, operations %v; want completed", rec.Lifecycle, rec.operations())
	}
}

// heldUpstream is a scripted upstream that proposes one get_quote call of HELD the
// first time it is asked and answers with text every later time; asked counts its
// calls.
func heldUpstream(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var asked atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			_, _ = w.Write([]byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"scripted","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_h","type":"function","function":{"name":"get_quote","arguments":"{\"symbol\":\"HELD\"}"}}]}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
			return
		}
		_, _ = w.Write([]byte(`{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"scripted","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"HELD trades at 1.00 USD."}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	t.Cleanup(up.Close)
	return up.URL, &asked
}

// heldConfig is the gateway example pointed at upstream, with a guard rule that holds
// every quote of HELD for an approval.
func heldConfig(t *testing.T, upstream string) string {
	t.Helper()
	return gatewayConfig(t, upstream+"/v1", "", map[string]string{"hooks/25-held.yaml": `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: held}
guards:
  policy_revision: trade-limits-v1
  rules:
    - name: held-symbol
      operation: tool_call
      effect: require_approval
      deny_if: "call.capability == 'stock_quote' && call.parameters.symbol == 'HELD'"
      code: symbol_held
      reason: quotes of this symbol need an approval
`})
}

// heldApproval returns the approval a held round's refusal names, with its URL.
func heldApproval(t *testing.T, c *openai.ChatCompletion) string {
	t.Helper()
	approval := regexp.MustCompile(`apr_[0-9a-f]{32}_1`).FindString(c.Choices[0].Message.Content)
	if len(c.Choices[0].Message.ToolCalls) != 0 || approval == "" || !strings.Contains(c.Choices[0].Message.Content, "/v1/approvals/"+approval) {
		t.Fatalf("held round = %+v", c.Choices[0])
	}
	return approval
}

// wantApprovedCall requires c to be exactly the approved get_quote call of HELD under
// request first (id is c's), with the model asked once in all.
func wantApprovedCall(t *testing.T, c *openai.ChatCompletion, id, first string, asked *atomic.Int32) {
	t.Helper()
	msg := c.Choices[0].Message
	if id != first || c.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_quote" ||
		msg.ToolCalls[0].Function.Arguments != `{"symbol":"HELD"}` {
		t.Fatalf("the same conversation after the approval = %+v (request %s, first %s); want the approved call", c.Choices[0], id, first)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the model was asked %d times, want once", n)
	}
}

// TestOpenAIGateway_HeldRoundSharedByReplicas: two daemons share Redis; a round held
// on one is refused again by the other before the decision, and once approved (on
// the first) the other answers the same conversation with exactly the approved call,
// under the same request, without asking the model; the turn then goes on through
// the first (openai-go client).
func TestOpenAIGateway_HeldRoundSharedByReplicas(t *testing.T) {
	storeURL := sharedRedis(t)
	up, asked := heldUpstream(t)
	dir := heldConfig(t, up)
	a := startDaemonEnv(t, []string{upstreamKey}, dir, "--store", storeURL)
	b := startDaemonEnv(t, []string{upstreamKey}, dir, "--store", storeURL)
	ga := &gateway{d: a, dir: dir, upstream: up, client: newClient(a.url, "unused")}
	gb := &gateway{d: b, dir: dir, upstream: up, client: newClient(b.url, "unused")}
	params := ask("what is HELD trading at?")
	c, id := ga.complete(t, params)
	approval := heldApproval(t, c)
	if again, againID := gb.complete(t, params); againID != id || heldApproval(t, again) != approval {
		t.Fatalf("the other replica before the decision: request %s (first %s), %+v; want the same refusal", againID, id, again.Choices[0])
	}
	if status, body := a.do(t, "POST", "/v1/approvals/"+approval, `{"decision":"approve"}`); status != 200 {
		t.Fatalf("approve: %d %s", status, body)
	}
	c, id2 := gb.complete(t, params)
	wantApprovedCall(t, c, id2, id, asked)
	runTools(&params, c, map[string]string{"HELD": `{"price":1,"currency":"USD"}`})
	if c, _ = ga.complete(t, params); c.Choices[0].Message.Content != "HELD trades at 1.00 USD." {
		t.Fatalf("answer = %+v", c.Choices[0])
	}
	if rec := gb.record(t, id); rec.Lifecycle != "completed" {
		t.Errorf("record lifecycle %s, operations %v; want completed", rec.Lifecycle, rec.operations())
	}
}

// TestOpenAIGateway_HeldRoundSurvivesRestart: a round held before a restart on the
// same --data-dir is refused again after it, and once approved the restarted daemon
// answers the same conversation with exactly the approved call without asking the
// model (openai-go client).
func TestOpenAIGateway_HeldRoundSurvivesRestart(t *testing.T) {
	data := t.TempDir()
	up, asked := heldUpstream(t)
	dir := heldConfig(t, up)
	before := startDaemonEnv(t, []string{upstreamKey}, dir, "--data-dir", data)
	g := &gateway{d: before, dir: dir, upstream: up, client: newClient(before.url, "unused")}
	params := ask("what is HELD trading at?")
	c, id := g.complete(t, params)
	approval := heldApproval(t, c)
	before.stop(t)
	after := startDaemonEnv(t, []string{upstreamKey}, dir, "--data-dir", data)
	g = &gateway{d: after, dir: dir, upstream: up, client: newClient(after.url, "unused")}
	if again, againID := g.complete(t, params); againID != id || heldApproval(t, again) != approval || asked.Load() != 1 {
		t.Fatalf("after the restart, before the decision: request %s (first %s), %+v, model asked %d times; want the same refusal",
			againID, id, again.Choices[0], asked.Load())
	}
	if status, body := after.do(t, "POST", "/v1/approvals/"+approval, `{"decision":"approve"}`); status != 200 {
		t.Fatalf("approve: %d %s", status, body)
	}
	c, id2 := g.complete(t, params)
	wantApprovedCall(t, c, id2, id, asked)
}
