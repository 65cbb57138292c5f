package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// TestOpenAIGateway_HeldRoundAnsweredOnceApproved: a round whose call a rule with
// effect require_approval holds is refused naming the approval (openai-go client);
// sent again before the decision, the same conversation gets the refusal again; once
// approved, it gets exactly the approved call, under the same request, without the
// model being asked again; and the round then goes on as any other.
func TestOpenAIGateway_HeldRoundAnsweredOnceApproved(t *testing.T) {
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
	defer up.Close()
	dir := gatewayConfig(t, up.URL+"/v1", "", map[string]string{"hooks/25-held.yaml": `apiVersion: agentd.dev/v1
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
	d := startDaemonEnv(t, []string{upstreamKey}, dir)
	g := &gateway{d: d, dir: dir, upstream: up.URL, client: newClient(d.url, "unused")}
	params := ask("what is HELD trading at?")
	c, id := g.complete(t, params)
	approval := regexp.MustCompile(`apr_[0-9a-f]{32}_1`).FindString(c.Choices[0].Message.Content)
	if len(c.Choices[0].Message.ToolCalls) != 0 || approval == "" || !strings.Contains(c.Choices[0].Message.Content, "/v1/approvals/"+approval) {
		t.Fatalf("held round = %+v", c.Choices[0])
	}
	if again, _ := g.complete(t, params); len(again.Choices[0].Message.ToolCalls) != 0 || !strings.Contains(again.Choices[0].Message.Content, approval) {
		t.Fatalf("the same conversation before the decision = %+v; want the refusal again", again.Choices[0])
	}
	if status, body := d.do(t, "POST", "/v1/approvals/"+approval, `{"decision":"approve"}`); status != 200 {
		t.Fatalf("approve: %d %s", status, body)
	}
	c, id2 := g.complete(t, params)
	msg := c.Choices[0].Message
	if id2 != id || c.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_quote" ||
		msg.ToolCalls[0].Function.Arguments != `{"symbol":"HELD"}` {
		t.Fatalf("the same conversation after the approval = %+v (request %s, first %s); want the approved call", c.Choices[0], id2, id)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the model was asked %d times, want once", n)
	}
	runTools(&params, c, map[string]string{"HELD": `{"price":1,"currency":"USD"}`})
	if c, _ = g.complete(t, params); c.Choices[0].Message.Content != "HELD trades at 1.00 USD." {
		t.Fatalf("answer = %+v", c.Choices[0])
	}
	rec := g.record(t, id)
	if rec.Lifecycle != "completed" {
		t.Errorf("record lifecycle %s, operations %v; want completed", rec.Lifecycle, rec.operations())
	}
}
