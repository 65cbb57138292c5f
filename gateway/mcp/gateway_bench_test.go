package mcp

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkToolsCall is one tools/call of an HTTP upstream's echo, made directly and
// through the gateway (in process, both over streamable HTTP on loopback), in sessions
// of 10 calls after warm-up sessions of the same shape, so every review is a decision
// memo hit. The difference between the two is what the gateway adds (make bench's row
// 6 measures the same against the daemon).
func BenchmarkToolsCall(b *testing.B) {
	up := newHTTPUpstream(b, "web", "")
	h := newHarness(b, httpServer("web", up.url(), ""))
	h.waitReady("web")
	gateway := httptest.NewServer(h.gw.Handler())
	defer gateway.Close()
	for _, side := range []struct{ name, url string }{{"direct", up.url()}, {"gateway", gateway.URL}} {
		b.Run(side.name, func(b *testing.B) {
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			ctx := context.Background()
			var cs *mcp.ClientSession
			call := func(i int) {
				if i%10 == 0 {
					if cs != nil {
						_ = cs.Close()
					}
					var err error
					if cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: side.url, DisableStandaloneSSE: true}, nil); err != nil {
						b.Fatal(err)
					}
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "m"}})
				if err != nil || res.IsError {
					b.Fatalf("echo: %v %+v", err, res)
				}
			}
			for i := range 100 { // warm-up: ten sessions
				call(i)
			}
			b.ResetTimer()
			for i := range b.N {
				if i%10 == 0 {
					b.StopTimer()
					call(i) // a session's first call includes connecting
					b.StartTimer()
					continue
				}
				call(i)
			}
			b.StopTimer()
			_ = cs.Close()
		})
	}
}

// BenchmarkReviewAndReport is the driver work of one tools/call, without the network:
// the phase review and the guards (admit), then Finish and after_execution (report),
// in sessions of 10 and of 200 calls after warm-up calls of the same shape (memo
// hits). Every call reports the session's combined result, so a call's cost grows with
// the calls before it; the longer sessions show how.
func BenchmarkReviewAndReport(b *testing.B) {
	up := newHTTPUpstream(b, "web", "")
	h := newHarness(b, httpServer("web", up.url(), ""))
	h.waitReady("web")
	route := (*h.gw.tools.Load())["echo"]
	ctx := context.Background()
	for _, calls := range []int{10, 200} {
		b.Run(fmt.Sprintf("session=%d", calls), func(b *testing.B) {
			var s *session
			call := func(i int) {
				if i%calls == 0 {
					s = &session{id: requestID(newSessionID()), opening: sessionOpening(nil)}
				}
				admitted, ref := h.gw.admit(ctx, s, route, map[string]any{"message": "m"})
				if ref != nil {
					b.Fatal(ref)
				}
				res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "m"}}}
				up, _ := h.gw.upstreamOf(admitted.Step)
				r, _ := h.gw.finish(ctx, s, admitted.Step, up.settings(), res, nil, time.Millisecond)
				h.gw.report(ctx, s, r)
			}
			for i := range calls {
				call(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				call(i)
			}
		})
	}
}
