package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/internal/capture"
)

// requireMCPTools fails under CI=true, and skips otherwise, when the npm packages of
// scripts/npm-deps.sh (the reference MCP server and the TypeScript SDK) are missing.
func requireMCPTools(t *testing.T) {
	t.Helper()
	for _, pkg := range []string{"server-everything/dist/index.js", "sdk/package.json"} {
		p := filepath.Join(repoRoot(t), "tools/mcp/node_modules/@modelcontextprotocol", pkg)
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the MCP test packages are not installed (%v); CI runs scripts/npm-deps.sh first", err)
			}
			t.Skipf("the MCP test packages are not installed; run scripts/npm-deps.sh (%v)", err)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
}

// waitMCPUpstreams waits until every MCP upstream of the daemon is ready.
func (d *daemon) waitMCPUpstreams(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := d.do(t, "GET", "/v1/status", "")
		var st struct {
			Gateways struct {
				MCP struct {
					Servers []struct{ State string }
				}
			}
		}
		_ = json.Unmarshal([]byte(body), &st)
		ready := len(st.Gateways.MCP.Servers) > 0
		for _, s := range st.Gateways.MCP.Servers {
			ready = ready && s.State == "ready"
		}
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("MCP upstreams not ready after 30s: %s\n%s", body, d.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMCPGateway_TypeScriptSDKClient is the cross-SDK check: a client built with the
// official TypeScript SDK, through the daemon's /mcp, to the npm reference server. The
// listed tools are exactly the allowed ones, an allowed call returns the server's
// result, the disallowed tool under its own, another letter case and a qualified name
// is refused without reaching the server, the session goes on after the refusals, and
// its record shows the allowed calls and the rejected review.
func TestMCPGateway_TypeScriptSDKClient(t *testing.T) {
	requireMCPTools(t)
	root := repoRoot(t)
	d := startDaemon(t, filepath.Join(root, "examples/mcp-gateway"))
	d.waitMCPUpstreams(t)
	calls := `{"get-env":{},"echo":{"message":"from TypeScript"},"GET-ENV":{},"everything__get-env":{},"get-sum":{"a":40,"b":2}}`
	cmd := exec.Command("node", filepath.Join(root, "tools/mcp/check-client.mjs"), d.url+"/mcp", calls)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v\n%s\n--- agentd log ---\n%s", err, out, d.stderr)
	}
	var got struct {
		Tools []string
		Calls []struct {
			Name    string
			IsError bool
			Text    string
			Meta    map[string]any
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %s: %v", out, err)
	}
	slices.Sort(got.Tools)
	if want := []string{"echo", "get-structured-content", "get-sum", "trigger-long-running-operation"}; !slices.Equal(got.Tools, want) {
		t.Errorf("listed tools = %v, want exactly the allowed %v", got.Tools, want)
	}
	if len(got.Calls) != 5 {
		t.Fatalf("calls = %+v, want five", got.Calls)
	}
	allowed := map[string]string{"echo": "Echo: from TypeScript", "get-sum": "The sum of 40 and 2 is 42."}
	for _, c := range got.Calls {
		refusal, _ := c.Meta["dev.agentd/refusal"].(map[string]any)
		if want, ok := allowed[c.Name]; ok && (c.IsError || c.Text != want) {
			t.Errorf("%s = %+v, want %q", c.Name, c, want)
		} else if !ok && (!c.IsError || refusal["code"] == nil) {
			t.Errorf("%s = %+v, want a refusal", c.Name, c)
		}
	}
	requestID, _ := got.Calls[1].Meta["dev.agentd/request_id"].(string)
	var rec engine.ExecutionRecord
	var body string
	for deadline := time.Now().Add(10 * time.Second); rec.Result == nil; time.Sleep(20 * time.Millisecond) { // a call's result is reported beside its answer
		var status int
		if status, body = d.do(t, "GET", "/v1/executions/"+requestID, ""); status != 200 || time.Now().After(deadline) {
			t.Fatalf("GET /v1/executions/%s = %d %s", requestID, status, body)
		}
		if err := json.Unmarshal([]byte(body), &rec); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); len(rec.Result.Steps) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, body = d.do(t, "GET", "/v1/executions/"+requestID, "")
		rec = engine.ExecutionRecord{}
		if err := json.Unmarshal([]byte(body), &rec); err != nil {
			t.Fatal(err)
		}
	}
	var accepted []string
	for _, p := range rec.Phases {
		if len(p.Results) == 1 && p.Results[0].Success {
			accepted = append(accepted, p.Plan.Steps[0].Capability())
		}
	}
	if !slices.Equal(accepted, []string{"echo", "get-sum"}) {
		t.Errorf("accepted and succeeded phases = %v, want echo and get-sum: %s", accepted, body)
	}
	if len(rec.Rejections) != 1 || rec.Rejections[0].Plan.Steps[0].Capability() != "get-env" || len(rec.Result.Steps) != 2 {
		t.Errorf("the record has %d rejections and %d forwarded calls, want get-env's, and echo and get-sum: %s", len(rec.Rejections), len(rec.Result.Steps), body)
	}
}

// TestMCP_StdioServesOneSession runs `agentd mcp` the way a client that spawns its
// servers does, with the official Go SDK's command transport; its decisions are in
// the decision log file once it exits, as serve writes them.
func TestMCP_StdioServesOneSession(t *testing.T) {
	requireMCPTools(t)
	decisions := filepath.Join(t.TempDir(), "decisions.log")
	cmd := exec.Command(binary, "mcp", "--config", filepath.Join(repoRoot(t), "examples/mcp-gateway"), "--watch=false", "--decision-log-file", decisions)
	stderr := &capture.Buffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-check", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	defer cs.Close()
	var tools []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool.Name)
	}
	slices.Sort(tools)
	if want := []string{"echo", "get-structured-content", "get-sum", "trigger-long-running-operation"}; !slices.Equal(tools, want) {
		t.Errorf("tools = %v, want %v (the first listing after start must see the upstream)", tools, want)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-sum", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || res.IsError {
		t.Fatalf("get-sum: %v %+v\n%s", err, res, stderr)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text != "The sum of 1 and 2 is 3." {
		t.Errorf("get-sum = %q", text)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-env"})
	if err != nil || !res.IsError {
		t.Errorf("get-env: %v %+v, want a refusal", err, res)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), `"msg":"agentd mcp serving on stdio"`) {
		t.Errorf("stderr has no start line:\n%s", stderr)
	}
	_, events := logEvents(t, decisions)
	var checked, stages []string
	for _, e := range events {
		switch e["kind"] {
		case "check":
			checked = append(checked, fmt.Sprint(e["operation"], " ", e["outcome"]))
		case "stage":
			stages = append(stages, fmt.Sprint(e["stage"], " ", e["outcome"]))
		}
	}
	if !slices.Contains(checked, "tool_call allowed") || !slices.Contains(stages, "after_planning accepted") || !slices.Contains(stages, "after_planning rejected") {
		t.Errorf("decision events: checks %v, stages %v; want get-sum's allowed check and get-sum's and get-env's reviews", checked, stages)
	}
}

// TestServe_SIGTERMEndsOpenMCPSessions: an MCP client keeps an event stream open for
// server notifications; SIGTERM ends its session instead of waiting out the drain
// timeout. The upstream never starts, which leaves the gateway serving.
func TestServe_SIGTERMEndsOpenMCPSessions(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "hooks/gateway.yaml", `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: gateway}
gateways:
  mcp:
    servers:
      - {name: missing, namespace: demo, command: [/nonexistent/mcp-server], tools: [{name: echo}]}
`)
	d := startDaemon(t, dir, "--drain-timeout", "20s", "--allow-no-plan-review") // the gateway alone
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "drain-check", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, body := d.do(t, "GET", "/v1/status", "")
	if !strings.Contains(body, `"name":"missing"`) || !strings.Contains(body, "/nonexistent/mcp-server") {
		t.Errorf("status does not show the upstream that never starts: %s", body)
	}
	started := time.Now()
	d.stop(t)
	if took := time.Since(started); took > 10*time.Second {
		t.Errorf("SIGTERM took %s with an MCP session open", took)
	}
}

// TestMCPGateway_RolesAndTenants: /mcp takes an orchestrator's token and refuses a
// viewer's, and a tenant's token opens sessions of its tenant, whose records a viewer
// sees as the tenant's.
func TestMCPGateway_RolesAndTenants(t *testing.T) {
	requireMCPTools(t)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	writeFile(t, filepath.Dir(tokens), filepath.Base(tokens), `
- {token: orch-acme, role: orchestrator, tenant: acme}
- {token: viewer-all, role: viewer}
`)
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples/mcp-gateway"), "--token-file", tokens)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"roles","version":"1"}}}`
	mcpHeaders := func(token string) []string {
		return []string{"Authorization", "Bearer " + token, "Accept", "application/json, text/event-stream"}
	}
	if status, body := d.do(t, "POST", "/mcp", initialize, mcpHeaders("viewer-all")...); status != 403 || !strings.Contains(body, `"forbidden"`) {
		t.Errorf("a viewer's initialize = %d %s, want 403 forbidden", status, body)
	}
	ctx := context.Background()
	httpClient := &http.Client{Transport: bearer{token: "orch-acme"}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "acme", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url + "/mcp", HTTPClient: httpClient, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("an orchestrator's session: %v\n%s", err, d.stderr)
	}
	defer cs.Close()
	deadline := time.Now().Add(30 * time.Second)
	var res *mcp.CallToolResult
	for res == nil || refusal(res) == "unknown_tool" && time.Now().Before(deadline) { // until the upstream is ready
		if res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "acme"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res.IsError {
		t.Fatalf("echo: %+v", res.Content[0])
	}
	id, _ := res.Meta["dev.agentd/request_id"].(string)
	status, body := d.do(t, "GET", "/v1/executions/"+id, "", "Authorization", "Bearer viewer-all")
	if status != 200 || !strings.Contains(body, `"tenant":"acme"`) {
		t.Errorf("the session's record = %d %s, want it of tenant acme", status, body)
	}
}

// refusal is the code of a refused call's result, "" for any other.
func refusal(res *mcp.CallToolResult) string {
	r, _ := res.Meta["dev.agentd/refusal"].(map[string]any)
	code, _ := r["code"].(string)
	return code
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
