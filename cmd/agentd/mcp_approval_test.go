package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPGateway_HeldCallElicitsTheViewersApprovalsPage: through the daemon's /mcp, a
// client (MCP Go SDK, an orchestrator's token) that declared URL-mode elicitation is
// asked, for a held call, to open the viewer's approvals page at the daemon's origin;
// the human approves there (an approver's token) before the client answers, and the
// call is then forwarded once. A client without the capability gets the isError
// refusal naming the approval, and its call never reaches the server.
func TestMCPGateway_HeldCallElicitsTheViewersApprovalsPage(t *testing.T) {
	var forwarded atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "transfer", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			forwarded.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	writeFile(t, dir, "hooks/gateway.yaml", `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: gateway}
guards:
  policy_revision: transfers-v1
  rules:
    - name: large-transfers
      operation: tool_call
      effect: require_approval
      deny_if: "call.capability == 'transfer' && call.parameters.amount > 1000"
      code: large_transfer
      reason: transfers above 1000 need approval
gateways:
  mcp:
    servers:
      - {name: bank, namespace: finance, url: `+up.URL+`, tools: [{name: transfer}]}
`)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	writeFile(t, filepath.Dir(tokens), filepath.Base(tokens), `
- {token: orch, role: orchestrator}
- {token: desk, role: approver, name: desk}
`)
	d := startDaemon(t, dir, "--allow-no-plan-review", "--token-file", tokens)
	ctx := context.Background()
	connect := func(opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "payments", Version: "1"}, opts).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{token: "orch"}}, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, d.stderr)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	args := map[string]any{"to": "ACME", "amount": 5000}

	plain := connect(nil)
	deadline := time.Now().Add(30 * time.Second)
	var res *mcp.CallToolResult
	var err error
	for res == nil || refusal(res) == "unknown_tool" && time.Now().Before(deadline) { // until the upstream is ready
		if res, err = plain.CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: args}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !res.IsError || refusal(res) != "approval_required" || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "/v1/approvals/apr_") {
		t.Fatalf("a client without URL elicitation: %+v; want the isError refusal naming the approval", res)
	}

	var asked []*mcp.ElicitParams
	eliciting := connect(&mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params)
			// the human, on the page, with an approver's token
			if status, body := d.do(t, "POST", "/v1/approvals/"+req.Params.ElicitationID, `{"decision":"approve","comment":"ok"}`, "Authorization", "Bearer desk"); status != 200 {
				t.Errorf("approve: %d %s", status, body)
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	res, err = eliciting.CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].Mode != "url" || asked[0].URL != d.url+"/ui/#/approvals" || !strings.HasPrefix(asked[0].ElicitationID, "apr_") {
		t.Fatalf("elicitations %+v; want one, URL mode, at %s/ui/#/approvals", asked, d.url)
	}
	if res.IsError || forwarded.Load() != 1 {
		t.Fatalf("the call after the approval: %+v, forwarded %d times; want it forwarded once", res, forwarded.Load())
	}
	status, body := d.do(t, "GET", "/v1/approvals/"+asked[0].ElicitationID, "", "Authorization", "Bearer desk")
	if status != 200 || !strings.Contains(body, `"used_at"`) || !strings.Contains(body, `"decided_by":"desk"`) {
		t.Errorf("the approval after the call = %d %s; want it used, decided by desk", status, body)
	}
}
