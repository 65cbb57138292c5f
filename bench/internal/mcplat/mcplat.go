// Package mcplat measures the latency agentd's MCP gateway adds to a tools/call: the
// same calls, made one at a time by a client of the official Go SDK over streamable
// HTTP, to an upstream MCP server directly, through a proxy that forwards with the same
// SDK and reviews nothing (the cost of the hop itself), and through the gateway (/mcp
// of a running agentd whose config names that upstream), in rounds.
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

// Proxy returns a handler that serves echo by forwarding each call to the upstream at
// url through the same SDK (one client session, opened here), reviewing nothing: what
// one more MCP hop costs by itself, the floor under what the gateway adds. It also
// answers GET /readyz. close ends the upstream session.
func Proxy(ctx context.Context, url string) (h http.Handler, close func() error, err error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-proxy", Version: "1"}, nil)
	up, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy: connect %s: %w", url, err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-proxy", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return up.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return mux, up.Close, nil
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

// Measure calls echo at each of urls (the upstream directly, through a proxy, through
// the gateway) in rounds: one session on each side at a time, and each call made on
// every side in turn, the order rotating every round, so that all sides see the same
// moments of a shared machine. It returns each side's latency, in the order of urls. A
// call that fails or answers an error fails the measurement.
func Measure(ctx context.Context, urls []string, o Options) ([]Latency, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "agentd-bench", Version: "1"}, nil)
	took := make([][]time.Duration, len(urls))
	round := 0
	for n := range o.Warmup + o.Sessions {
		sessions := make([]*mcp.ClientSession, 0, len(urls))
		closeAll := func() error {
			var errs []error
			for _, cs := range sessions {
				errs = append(errs, cs.Close())
			}
			return errors.Join(errs...)
		}
		for _, url := range urls {
			cs, err := connect(ctx, client, url)
			if err != nil {
				_ = closeAll()
				return nil, err
			}
			sessions = append(sessions, cs)
		}
		for i := range o.Calls {
			for k := range urls {
				side := (k + round) % len(urls)
				d, err := call(ctx, sessions[side], i)
				if err != nil {
					_ = closeAll()
					return nil, err
				}
				if n >= o.Warmup {
					took[side] = append(took[side], d)
				}
			}
			round++
		}
		if err := closeAll(); err != nil {
			return nil, err
		}
	}
	out := make([]Latency, len(urls))
	for i, xs := range took {
		out[i] = latency(xs)
	}
	return out, nil
}

// connect opens a client session on the MCP server at url.
func connect(ctx context.Context, client *mcp.Client, url string) (*mcp.ClientSession, error) {
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", url, err)
	}
	return cs, nil
}

// Sessions are the client sessions of an open-loop run (load.OpenLoop) on one side:
// one per worker, each making the calls of Measure's sessions (the i-th call of a
// session names step i+1) and renewed after calls calls, between requests (Idle).
type Sessions struct {
	client *mcp.Client
	url    string
	calls  int
	cs     []*mcp.ClientSession
	made   []int // calls made on each worker's session
}

// OpenSessions opens a session per worker on the MCP server at url.
func OpenSessions(ctx context.Context, url string, workers, calls int) (*Sessions, error) {
	s := &Sessions{client: mcp.NewClient(&mcp.Implementation{Name: "agentd-bench", Version: "1"}, nil), url: url, calls: calls,
		cs: make([]*mcp.ClientSession, workers), made: make([]int, workers)}
	for w := range workers {
		cs, err := connect(ctx, s.client, url)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		s.cs[w] = cs
	}
	return s, nil
}

// Send is a load.Sender: the next call of worker's session.
func (s *Sessions) Send(ctx context.Context, worker, _ int) error {
	_, err := call(ctx, s.cs[worker], s.made[worker])
	s.made[worker]++
	return err
}

// Idle is load.OpenOptions.Idle: it replaces a worker's session that has made its
// calls with a new one.
func (s *Sessions) Idle(ctx context.Context, worker int) error {
	if s.made[worker] < s.calls {
		return nil
	}
	err := s.cs[worker].Close()
	s.cs[worker], s.made[worker] = nil, 0
	if err != nil {
		return err
	}
	s.cs[worker], err = connect(ctx, s.client, s.url)
	return err
}

// Close ends every open session.
func (s *Sessions) Close() error {
	var errs []error
	for _, cs := range s.cs {
		if cs != nil {
			errs = append(errs, cs.Close())
		}
	}
	return errors.Join(errs...)
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
