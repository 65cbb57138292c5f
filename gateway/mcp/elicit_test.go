package mcp

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/engine"
)

// TestGateway_HeldCallElicitsTheApprovalsPage: a client (MCP go-sdk) that declared
// URL-mode elicitation is asked, for a held call, to open the approvals page at the
// origin it reached the gateway at, the elicitation naming the approval; on its
// answer the call is checked again: approved meanwhile it is forwarded, else it is
// the isError refusal naming the same approval, and the client is asked once per call.
// A client that declared form-mode elicitation only is never asked. The session speaks
// MCP 2025-11-25 (the SDK client falls back to it from its newest version), so the
// SDK asks the client with an elicitation/create request within the call.
func TestGateway_HeldCallElicitsTheApprovalsPage(t *testing.T) {
	h := newHarnessWith(t, stdioServer("local", ""), func(c *Config) { c.ApprovalsPage = "/ui/#/approvals" })
	h.waitReady("local")
	ctx := context.Background()
	for i, tc := range []struct {
		name    string
		modes   mcp.ElicitationCapabilities
		decide  engine.ApprovalDecision // what the user decides on the page before answering, "" nothing
		action  string
		wantErr string // the refusal code; "" forwarded
		asked   int
	}{
		{name: "approved on the page", modes: mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}, decide: engine.DecisionApprove, action: "accept", asked: 1},
		{name: "accepted, not decided", modes: mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}, action: "accept", wantErr: engine.DenialApprovalRequired, asked: 1},
		{name: "rejected on the page", modes: mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}, decide: engine.DecisionReject, action: "accept", wantErr: engine.DenialApprovalRejected, asked: 1},
		{name: "declined", modes: mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}, action: "decline", wantErr: engine.DenialApprovalRequired, asked: 1},
		{name: "form mode only", modes: mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}, action: "accept", wantErr: engine.DenialApprovalRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []*mcp.ElicitParams
			c := h.connectWith(func(o *mcp.ClientOptions) {
				o.Capabilities = &mcp.ClientCapabilities{Elicitation: &tc.modes}
				o.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params)
					mu.Unlock()
					if tc.decide != "" {
						if _, err := h.gw.cfg.Driver.Decide(ctx, req.Params.ElicitationID, tc.decide, "desk", ""); err != nil {
							return nil, err
						}
					}
					return &mcp.ElicitResult{Action: tc.action}, nil
				}
			}, nil)
			if v := c.InitializeResult().ProtocolVersion; v != "2025-11-25" {
				t.Fatalf("the session speaks MCP %s; this test covers 2025-11-25", v)
			}
			// arguments of this case's own: another case's approval is not this one's
			args := map[string]any{"a": 2000000, "b": i}
			res := c.call(t, "add", args)
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != tc.asked {
				t.Fatalf("the client was asked %d times, want %d: %+v", len(asked), tc.asked, asked)
			}
			if tc.asked > 0 {
				p := asked[0]
				if p.Mode != "url" || p.URL != h.url+"/ui/#/approvals" || !strings.HasPrefix(p.ElicitationID, "apr_") ||
					!strings.Contains(p.Message, p.ElicitationID) || !strings.Contains(p.Message, "/v1/approvals/"+p.ElicitationID) {
					t.Fatalf("elicitation = %+v; want URL mode at the approvals page naming the approval", p)
				}
			}
			if tc.wantErr == "" {
				if res.IsError || res.Meta[metaStepID] == nil {
					t.Fatalf("the call after the answer = %+v (%q); want it forwarded", res, text(res))
				}
				return
			}
			if !res.IsError || refusalCode(res) != tc.wantErr {
				t.Fatalf("the call after the answer = %q; want isError %s", text(res), tc.wantErr)
			}
			approval, _ := res.Meta[metaRefusal].(map[string]any)["approval"].(map[string]any)
			if tc.asked > 0 && approval["id"] != asked[0].ElicitationID {
				t.Fatalf("the refusal names %v, the elicitation %s", approval["id"], asked[0].ElicitationID)
			}
		})
	}
	h.waitUpstreamSaw(`local add {"a":2000000,"b":0}`)
	if calls := h.upstreamCalls(); len(calls) != 1 {
		t.Errorf("the upstream saw %v; want the approved call only", calls)
	}
}
