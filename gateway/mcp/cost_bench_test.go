package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/internal/cputime"
	"github.com/agentd-dev/agentd/server"
)

// BenchmarkToolsCall_Cost is issue 40.3's pair for the MCP gateway: the process CPU of
// a tools/call of an HTTP upstream's echo made directly and through the gateway (a
// client of the official SDK over streamable HTTP on loopback, sessions of 10 calls,
// memo hits), and of one after_planning stage call of the same step through the API's
// HTTP handler (called directly, no network) on the same driver and store, made in turn
// in one loop and each charged the CPU time the process spent while it ran. Client and
// upstream run in this process on both call sides, so gateway − direct is what the
// gateway adds (its review, guards and record, and one more hop on the SDK);
// added/stage sets that against a stage call.
func BenchmarkToolsCall_Cost(b *testing.B) {
	up := newHTTPUpstream(b, "web", "")
	var driver *engine.Driver
	h := newHarnessWith(b, httpServer("web", up.url(), ""), func(c *Config) {
		c.Logger = slog.New(slog.DiscardHandler) // the harness logs at debug level
		driver = c.Driver
	})
	h.waitReady("web")
	svc, err := server.New(server.Config{Registry: h.reg, Driver: driver, Records: h.mem})
	if err != nil {
		b.Fatal(err)
	}
	api := svc.Handler(server.HTTPOptions{})
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	type side struct {
		url string
		cs  *mcp.ClientSession
	}
	sides := []*side{{url: up.url()}, {url: h.url}}
	call := func(s *side, i int) {
		if i%10 == 0 {
			if s.cs != nil {
				_ = s.cs.Close()
			}
			var err error
			if s.cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true}, nil); err != nil {
				b.Fatal(err)
			}
		}
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "m"}})
		if err != nil || res.IsError {
			b.Fatalf("echo: %v %+v", err, res)
		}
	}
	plan := `{"plan_id":"p1","steps":[{"step_id":"step-1","agent_name":"web","namespace":"test","instruction":"echo","metadata":{"capability":"echo","parameters":{"message":"m"}}}]}`
	stage := func(i int) {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/hooks/after_planning", strings.NewReader(`{"request_id":"r`+strconv.Itoa(i)+`","request":"echo m","plan":`+plan+`}`))
		r.Header.Set("Content-Type", "application/json")
		api.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"plan_id":"p1"`) {
			b.Fatalf("stage call: %d %s", rec.Code, rec.Body)
		}
	}
	for i := range 100 { // warm-up: ten sessions on each side, and the memo
		call(sides[0], i)
		call(sides[1], i)
		stage(i)
	}
	var cpu [3]time.Duration // direct, gateway, stage
	n := 0
	for b.Loop() {
		for k := range 3 {
			at := (k + n) % 3 // the first rotates
			before := cputime.Process(b)
			if at == 2 {
				stage(100 + n)
			} else {
				call(sides[at], 100+n)
			}
			cpu[at] += cputime.Process(b) - before
		}
		n++
	}
	for _, s := range sides {
		_ = s.cs.Close()
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	b.ReportMetric(per(cpu[0]), "direct-cpu-ns/call")
	b.ReportMetric(per(cpu[1]), "gateway-cpu-ns/call")
	b.ReportMetric(per(cpu[2]), "stage-cpu-ns/op")
	b.ReportMetric((per(cpu[1])-per(cpu[0]))/per(cpu[2]), "added/stage")
}
