package config_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

func TestLoad_MCPGateway(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"hooks/10-catalog.yaml": hookSet("tools", `
catalog:
  - namespace: demo-tools
    agent: stock-service
    capabilities: [{name: stock_quote}]
gateways:
  mcp:
    servers:
      - name: everything
        namespace: demo-mcp
        command: [node, server.js, stdio]
        dir: upstreams
        env: {GREETING: hello}
        env_pass: [PATH]
        timeout: 5s
        tools:
          - {name: echo}
          - {name: slow, timeout: 2m, returns: [done]}
        resources: ["demo://resource/static/*"]
        prompts: [simple-prompt]
`),
		"hooks/20-remote.yaml": hookSet("remote", `
gateways:
  mcp:
    servers:
      - name: crm
        namespace: crm
        url: https://crm.example/mcp
        headers_env: {Authorization: CRM_TOKEN}
`),
	})
	gen := mustLoad(t, dir)
	gw := gen.Gateways.MCP
	if gw == nil || len(gw.Servers) != 2 {
		t.Fatalf("Gateways.MCP = %+v, want two servers", gw)
	}
	abs, _ := filepath.Abs(dir)
	every, crm := gw.Servers[0], gw.Servers[1]
	if every.Name != "everything" || every.Namespace != "demo-mcp" || every.Dir != filepath.Join(abs, "upstreams") ||
		every.Env["GREETING"] != "hello" || !slices.Equal(every.EnvPass, []string{"PATH"}) || every.File != "hooks/10-catalog.yaml" {
		t.Errorf("stdio server = %+v", every)
	}
	if got := every.ToolTimeout("echo"); got != 5*time.Second {
		t.Errorf("ToolTimeout(echo) = %v, want the server's 5s", got)
	}
	if got := every.ToolTimeout("slow"); got != 2*time.Minute {
		t.Errorf("ToolTimeout(slow) = %v, want the tool's 2m", got)
	}
	if crm.URL != "https://crm.example/mcp" || crm.HeadersEnv["Authorization"] != "CRM_TOKEN" || crm.Dir != "" ||
		crm.Timeout != config.DefaultMCPTimeout {
		t.Errorf("http server = %+v", crm)
	}
	for _, c := range []struct{ ns, agent, capability string }{
		{"demo-tools", "stock-service", "stock_quote"}, {"demo-mcp", "everything", "echo"}, {"demo-mcp", "everything", "slow"},
	} {
		if !validates(gen.Catalog, c.ns, c.agent, c.capability, "") {
			t.Errorf("the catalog lacks %s/%s %s", c.ns, c.agent, c.capability)
		}
	}
	if !gen.Catalog.Agent("crm", "crm") || validates(gen.Catalog, "crm", "crm", "anything", "") {
		t.Error("a server without tools is an agent with no capabilities")
	}
	if !validates(gen.Catalog, "demo-mcp", "everything", "slow", "done") || validates(gen.Catalog, "demo-mcp", "everything", "slow", "other") {
		t.Error("slow returns done, and only done")
	}
}

// validates reports whether plan validation accepts a step of capability on
// namespace/agent, and, when field is set, a second step reading the first one's
// response.data.<field>.
func validates(c *engine.Catalog, namespace, agent, capability, field string) bool {
	plan := &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{{
		StepID: "step-1", Namespace: namespace, AgentName: agent, Metadata: map[string]any{"capability": capability},
	}}}
	if field != "" {
		plan.Steps = append(plan.Steps, engine.RoutingStep{
			StepID: "step-2", Namespace: namespace, AgentName: agent, DependsOn: []string{"step-1"},
			Metadata: map[string]any{"capability": capability, "parameters": map[string]any{"x": "{{step-1.response.data." + field + "}}"}},
		})
	}
	return engine.ValidatePlan(plan, c, nil) == nil
}

func TestMCPServer_Transport(t *testing.T) {
	base := config.MCPServer{Name: "a", Command: []string{"node", "s.js"}, Dir: "/x", Env: map[string]string{"K": "v"}}
	same := base
	same.Tools = []config.MCPTool{{Name: "echo"}}
	same.Timeout = time.Second
	same.Prompts = []string{"*"}
	if !base.Transport(&same) {
		t.Error("tools, timeouts and pass-through settings need no reconnect")
	}
	for name, change := range map[string]func(*config.MCPServer){
		"command":  func(s *config.MCPServer) { s.Command = []string{"node", "t.js"} },
		"dir":      func(s *config.MCPServer) { s.Dir = "/y" },
		"env":      func(s *config.MCPServer) { s.Env = map[string]string{"K": "w"} },
		"env_pass": func(s *config.MCPServer) { s.EnvPass = []string{"HOME"} },
		"url":      func(s *config.MCPServer) { s.URL = "http://h/mcp" },
		"headers":  func(s *config.MCPServer) { s.HeadersEnv = map[string]string{"X": "Y"} },
	} {
		other := base
		change(&other)
		if base.Transport(&other) {
			t.Errorf("a changed %s must reconnect", name)
		}
	}
}

func TestLoad_NoGatewayNoCatalogAgents(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"hooks/x.yaml": hookSet("empty", "")})
	gen := mustLoad(t, dir)
	if gen.Gateways.MCP != nil || gen.Catalog != (*engine.Catalog)(nil) {
		t.Errorf("a directory without gateways has Gateways.MCP %v and catalog %v", gen.Gateways.MCP, gen.Catalog)
	}
}
