// Package mcplat measures the latency agentd's MCP gateway adds to a tools/call: the
// same calls, made one at a time by a client of the official Go SDK over streamable
// HTTP, to an upstream MCP server directly and through the gateway (/mcp of a running
// agentd whose config names that upstream), interleaved round by round.
//
// Calls are made in sessions of Options.Calls calls. The plan policy observes each
// step's id (step-1, step-2, … within a session), so after the warm-up sessions every
// measured call's review is a decision memo hit, as it is for an agent whose sessions
// repeat their shapes.
package mcplat

import (
	"context"
	"encoding/json"
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
	// Rounds of each side, interleaved; each round runs Sessions sessions of Calls
	// calls, after Warmup sessions that are not measured.
	Rounds, Sessions, Calls, Warmup int
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

// Measure calls the upstream at direct and the gateway at gateway, one call at a time.
func Measure(ctx context.Context, direct, gateway string, o Options) (Result, error) {
	var d, g []time.Duration
	for round := range o.Rounds {
		sides := []struct {
			url string
			out *[]time.Duration
		}{{direct, &d}, {gateway, &g}}
		if round%2 == 1 {
			slices.Reverse(sides)
		}
		for _, s := range sides {
			if _, err := sessions(ctx, s.url, o.Warmup, o.Calls); err != nil {
				return Result{}, err
			}
			took, err := sessions(ctx, s.url, o.Sessions, o.Calls)
			if err != nil {
				return Result{}, err
			}
			*s.out = append(*s.out, took...)
		}
	}
	return Result{Direct: latency(d), Gateway: latency(g)}, nil
}

// sessions runs n sessions of calls calls of echo against url and returns each call's
// latency. A call that fails or whose result is an error fails the measurement.
func sessions(ctx context.Context, url string, n, calls int) ([]time.Duration, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "agentd-bench", Version: "1"}, nil)
	var out []time.Duration
	for range n {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
		if err != nil {
			return nil, fmt.Errorf("connect %s: %w", url, err)
		}
		for i := range calls {
			start := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"n": i}})
			took := time.Since(start)
			if err == nil && res.IsError {
				err = fmt.Errorf("error result: %v", res.Content)
			}
			if err != nil {
				_ = cs.Close()
				return nil, fmt.Errorf("tools/call echo at %s: %w", url, err)
			}
			out = append(out, took)
		}
		if err := cs.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func latency(xs []time.Duration) Latency {
	if len(xs) == 0 {
		return Latency{}
	}
	slices.Sort(xs)
	at := func(q float64) time.Duration { return xs[min(len(xs)-1, int(q*float64(len(xs))))] }
	return Latency{P50: at(0.50), P99: at(0.99), N: len(xs)}
}
