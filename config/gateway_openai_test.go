package config_test

import (
	"slices"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
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
