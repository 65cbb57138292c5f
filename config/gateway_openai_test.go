package config_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine/diag"
)

func TestLoad_OpenAIGateway(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"hooks/10-catalog.yaml": hookSet("catalog", `
catalog:
  - namespace: demo-tools
    agent: stock-service
    capabilities: [{name: stock_quote}, {name: execute_trade}]
`),
		"hooks/20-gateway.yaml": hookSet("gateway", `
gateways:
  openai:
    upstream: http://127.0.0.1:9000/v1/
    api_key_env: UPSTREAM_API_KEY
    request_id_header: X-Conversation-Id
    request_id_field: metadata.request_id
    on_reject: error
    timeout: 5s
    tools:
      quote: {namespace: demo-tools, agent: stock-service, capability: stock_quote}
      get_quote: {namespace: demo-tools, agent: stock-service, capability: stock_quote}
      buy: {namespace: demo-tools, agent: stock-service, capability: execute_trade}
`),
	})
	gw := mustLoad(t, dir).Gateways.OpenAI
	if gw == nil {
		t.Fatal("Gateways.OpenAI is nil")
	}
	if gw.Upstream != "http://127.0.0.1:9000/v1" || gw.APIKeyEnv != "UPSTREAM_API_KEY" || gw.RequestIDHeader != "X-Conversation-Id" ||
		!slices.Equal(gw.RequestIDField, []string{"metadata", "request_id"}) || gw.OnReject != config.RejectError || gw.Timeout != 5*time.Second {
		t.Errorf("compiled gateway = %+v", gw)
	}
	if id, ok := gw.Tool("buy"); !ok || id != (config.ToolIdentity{Namespace: "demo-tools", Agent: "stock-service", Capability: "execute_trade"}) {
		t.Errorf(`Tool("buy") = %+v, %v`, id, ok)
	}
	if _, ok := gw.Tool("sell"); ok {
		t.Error(`Tool("sell") is mapped`)
	}
	if name, ok := gw.ToolFor(config.ToolIdentity{Namespace: "demo-tools", Agent: "stock-service", Capability: "stock_quote"}); !ok || name != "get_quote" {
		t.Errorf("ToolFor(stock_quote) = %q, %v, want the first name in sorted order", name, ok)
	}
	if got := gw.Tools(); !slices.Equal(got, []string{"buy", "get_quote", "quote"}) {
		t.Errorf("Tools() = %v", got)
	}
}

func TestLoad_OpenAIGatewayDefaults(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"hooks/gateway.yaml": hookSet("gateway", `
gateways:
  openai:
    upstream: https://models.example/v1
    tools: {}
`)})
	gw := mustLoad(t, dir).Gateways.OpenAI
	if gw.RequestIDHeader != config.DefaultRequestIDHeader || gw.OnReject != config.RejectRefuse ||
		gw.Timeout != config.DefaultUpstreamTimeout || gw.RequestIDField != nil || gw.APIKeyEnv != "" || len(gw.Tools()) != 0 {
		t.Errorf("defaults = %+v", gw)
	}
	empty := t.TempDir()
	writeFiles(t, empty, map[string]string{"hooks/none.yaml": hookSet("none", "hooks: []\n")})
	if gw := mustLoad(t, empty).Gateways.OpenAI; gw != nil {
		t.Errorf("a directory without gateways.openai compiled one: %+v", gw)
	}
}

// refusal_message sets the on_reject: refuse answer, with {decision_id} and {reason}
// replaced; the default names only those two; any other placeholder is a load error at
// the message.
func TestLoad_OpenAIGatewayRefusalMessage(t *testing.T) {
	load := func(message string) string {
		dir := t.TempDir()
		extra := ""
		if message != "" {
			extra = "    refusal_message: " + strconv.Quote(message) + "\n"
		}
		writeFiles(t, dir, map[string]string{"hooks/gateway.yaml": hookSet("gateway", `
gateways:
  openai:
    upstream: https://models.example/v1
`+extra+`    tools: {}
`)})
		return mustLoad(t, dir).Gateways.OpenAI.Refusal("d-1", "refused")
	}
	if got := load(""); got != "I can't do that: refused. (decision d-1)" {
		t.Errorf("default refusal = %q", got)
	}
	if got := load("Sorry ({decision_id}): {reason}"); got != "Sorry (d-1): refused" {
		t.Errorf("custom refusal = %q", got)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"hooks/gateway.yaml": hookSet("gateway", `
gateways:
  openai:
    upstream: https://models.example/v1
    refusal_message: "denied by {hook}"
    tools: {}
`)})
	list := loadFails(t, dir)
	if len(list) != 1 || list[0].Kind != diag.KindInvalidValue || list[0].Line != 7 || list[0].Field != "gateways.openai.refusal_message" {
		t.Errorf("errors = %v, want one invalid_value at the message", list)
	}
}
