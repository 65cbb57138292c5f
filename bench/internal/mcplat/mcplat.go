// Package mcplat measures the latency agentd's MCP gateway adds to a tools/call: the
// same calls, made one at a time by a client of the official Go SDK over streamable
// HTTP, to an upstream MCP server directly and through the gateway (/mcp of a running
// agentd whose config names that upstream), in pairs.
//
// Calls are made in sessions of Options.Calls calls. The plan policy observes each
// step's id (step-1, step-2, … within a session), so after the warm-up sessions every
// measured call's review is a decision memo hit, as it is for an agent whose sessions
// repeat their shapes.
package mcplat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
)

// Namespace and Server are the catalog identity of the upstream in the gateway config.
const (
	Namespace = "bench-mcp"
	Server    = "upstream"
)

// Upstream serves an MCP server with one tool, echo, over streamable HTTP on a
// loopback port, until stop is called.
func Upstream() (url string, stop func(), err error) {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/mcp", func() { _ = srv.Close() }, nil
}

// GatewayConfig writes an agentd config directory into dir: the required plan hook over
// policies, an allow-list of the upstream's echo, and the gateway in front of the
// upstream at url.
func GatewayConfig(dir string, policies []fixture.File, url string) error {
	allow, err := json.Marshal(map[string]any{"allowlist": map[string]any{Namespace: map[string]any{Server: []string{"echo"}}}})
	if err != nil {
		return err
	}
	gateway := fmt.Sprintf(`apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: bench-mcp}
gateways:
  mcp:
    servers:
      - {name: %s, namespace: %s, url: %q, tools: [{name: echo}]}
`, Server, Namespace, url)
	return fixture.Write(dir, append([]fixture.File{
		{Name: "hooks/plan.yaml", Data: []byte(fixture.PlanHook)},
		{Name: "hooks/gateway.yaml", Data: []byte(gateway)},
		{Name: "data/agentd/allowlist.json", Data: allow},
	}, policies...))
}

// Options bound a measurement.
type Options struct {
	// Sessions of Calls calls are measured on each side, after Warmup sessions.
	Sessions, Calls, Warmup int
}

// Latency is the distribution of one side's calls.
type Latency struct {
	P50, P99 time.Duration
	N        int
}

// Result is both sides of a measurement.
type Result struct {
	Direct, Gateway Latency
}

// Measure calls echo on the upstream at direct and through the gateway at gateway in
// pairs: one session on each side at a time, and each call made on one side and then
// on the other, the order swapping every pair, so that both sides see the same moments
// of a shared machine. A call that fails or answers an error fails the measurement.
func Measure(ctx context.Context, direct, gateway string, o Options) (Result, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "agentd-bench", Version: "1"}, nil)
	connect := func(url string) (*mcp.ClientSession, error) {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
		if err != nil {
			return nil, fmt.Errorf("connect %s: %w", url, err)
		}
		return cs, nil
	}
	var d, g []time.Duration
	pair := 0
	for n := range o.Warmup + o.Sessions {
		sides := [2]struct {
			cs  *mcp.ClientSession
			out *[]time.Duration
		}{{out: &d}, {out: &g}}
		var err error
		if sides[0].cs, err = connect(direct); err != nil {
			return Result{}, err
		}
		if sides[1].cs, err = connect(gateway); err != nil {
			_ = sides[0].cs.Close()
			return Result{}, err
		}
		for i := range o.Calls {
			first, second := 0, 1
			if pair%2 == 1 {
				first, second = 1, 0
			}
			pair++
			for _, side := range []int{first, second} {
				took, err := call(ctx, sides[side].cs, i)
				if err != nil {
					_ = sides[0].cs.Close()
					_ = sides[1].cs.Close()
					return Result{}, err
				}
				if n >= o.Warmup {
					*sides[side].out = append(*sides[side].out, took)
				}
			}
		}
		if err := errors.Join(sides[0].cs.Close(), sides[1].cs.Close()); err != nil {
			return Result{}, err
		}
	}
	return Result{Direct: latency(d), Gateway: latency(g)}, nil
}

// call makes the i-th call of a session and returns its latency.
func call(ctx context.Context, cs *mcp.ClientSession, i int) (time.Duration, error) {
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"n": i}})
	took := time.Since(start)
	if err == nil && res.IsError {
		err = fmt.Errorf("error result: %v", res.Content)
	}
	if err != nil {
		return 0, fmt.Errorf("tools/call echo: %w", err)
	}
	return took, nil
}

func latency(xs []time.Duration) Latency {
	if len(xs) == 0 {
		return Latency{}
	}
	slices.Sort(xs)
	at := func(q float64) time.Duration { return xs[min(len(xs)-1, int(q*float64(len(xs))))] }
	return Latency{P50: at(0.50), P99: at(0.99), N: len(xs)}
}
