package mcplat

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/bench/internal/load"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// TestMeasure_EverySideGetsEveryCall measures the upstream directly and through the
// proxy: every side gets every measured call, and the percentiles are ordered.
func TestMeasure_EverySideGetsEveryCall(t *testing.T) {
	url, stop, err := Upstream()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	h, closeProxy, err := Proxy(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := closeProxy(); err != nil {
			t.Error(err)
		}
	}()
	proxy := httptest.NewServer(h)
	defer proxy.Close()
	res, err := Measure(context.Background(), []string{url, proxy.URL + "/mcp", url}, Options{Sessions: 3, Calls: 4, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("%d sides measured, want 3", len(res))
	}
	for _, l := range res {
		if l.N != 12 || l.P50 <= 0 || l.P99 < l.P50 || l.P99 > time.Minute {
			t.Errorf("latency %+v, want 12 calls with 0 < p50 <= p99", l)
		}
	}
}

// TestGatewayConfig_Loads: the config the daemon is started on compiles, with the
// upstream as the gateway's one server and echo its catalog capability.
func TestGatewayConfig_Loads(t *testing.T) {
	policies, err := fixture.Policies("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := GatewayConfig(dir, policies, "http://127.0.0.1:1/mcp"); err != nil {
		t.Fatal(err)
	}
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if gw := gen.Gateways.MCP; gw == nil || len(gw.Servers) != 1 || gw.Servers[0].URL != "http://127.0.0.1:1/mcp" {
		t.Fatalf("gateway = %+v", gen.Gateways.MCP)
	}
	plan := &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{{
		StepID: "step-1", Namespace: Namespace, AgentName: Server, Metadata: map[string]any{"capability": "echo"},
	}}}
	if err := engine.ValidatePlan(plan, gen.Catalog, nil); err != nil {
		t.Errorf("a plan calling echo: %v", err)
	}
}

// TestSessions_OpenLoop runs the open loop through Sessions against the upstream: every
// call answers, and sessions are renewed after their calls.
func TestSessions_OpenLoop(t *testing.T) {
	url, stop, err := Upstream()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	s, err := OpenSessions(context.Background(), url, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	first := s.cs[0].ID()
	r, err := load.OpenLoop(context.Background(), s.Send, load.OpenOptions{Rate: 500, Requests: 14, Workers: 2, Deadline: time.Minute, Idle: s.Idle})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Latencies) != 14 {
		t.Errorf("%d calls measured, want 14", len(r.Latencies))
	}
	if s.cs[0].ID() == first {
		t.Errorf("worker 0's session %s was not renewed after 3 calls", first)
	}
	for w, n := range s.made {
		if n >= 3 {
			t.Errorf("worker %d made %d calls on one session, want < 3", w, n)
		}
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}
