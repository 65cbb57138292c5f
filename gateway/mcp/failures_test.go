package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestGateway_UpstreamCrashMidCall(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	c := h.connect()
	pid := text(c.call(t, "pid", nil))
	res := c.call(t, "crash", nil)
	if !res.IsError || !strings.Contains(text(res), `MCP server "local"`) {
		t.Fatalf("crash = %+v (%q), want an error result naming the server", res, text(res))
	}
	h.waitFor("local restarted", func(st Status) bool {
		return st.Servers[0].State == stateReady && st.Servers[0].Restarts >= 1
	})
	// The same session goes on, on a new process.
	if again := text(c.call(t, "pid", nil)); again == pid || again == "" {
		t.Errorf("pid after the crash = %q, before %q", again, pid)
	}
	rec, err := h.mem.Get(context.Background(), c.requestID())
	if err != nil {
		t.Fatal(err)
	}
	if r := rec.Result.Steps[1]; r.StepID != "step-2" || r.Success || r.Error == "" {
		t.Errorf("the crashed call's step result = %+v", r)
	}
}

func TestGateway_ToolTimeout(t *testing.T) {
	// The timeout leaves a loaded machine time to start the call upstream (a call
	// cancelled before its handler runs logs nothing there); the call would take 20s.
	h := newHarness(t, strings.Replace(stdioServer("local", ""), "{name: slow}", "{name: slow, timeout: 2s}", 1))
	h.waitReady("local")
	c := h.connect()
	res := c.call(t, "slow", map[string]any{"steps": 200, "delay_ms": 100})
	if !res.IsError || !strings.Contains(text(res), "timeout of 2s") {
		t.Fatalf("slow = %q, want the timeout", text(res))
	}
	if text(c.call(t, "echo", map[string]any{"message": "after"})) != "Echo: after (from local)" {
		t.Error("the upstream does not answer after a timed-out call")
	}
	if st := h.gw.Status(context.Background()).Servers[0]; st.Restarts != 0 {
		t.Errorf("a timeout restarted the upstream: %+v", st)
	}
	h.waitUpstreamSaw("local slow cancelled") // the timed-out call was cancelled upstream
}

// Malformed lines of an upstream are dropped (a response's id answered with an error)
// and logged: their text only with LogPayloads, else their length and a digest.
func TestGateway_MalformedUpstreamMessages(t *testing.T) {
	for _, payloads := range []bool{false, true} {
		t.Run(fmt.Sprintf("payloads=%v", payloads), func(t *testing.T) {
			h := newHarnessWith(t, stdioServer("local", ""), func(c *Config) { c.LogPayloads = payloads })
			h.waitReady("local")
			c := h.connect()
			res := c.call(t, "garble", nil)
			if !res.IsError || !strings.Contains(text(res), "malformed message") {
				t.Fatalf("garble = %q, want an error result about the malformed message", text(res))
			}
			if res := c.call(t, "noise", nil); res.IsError || text(res) != "noise" {
				t.Fatalf("noise = %q: a line that answers nothing must only be dropped", text(res))
			}
			if res := c.call(t, "echo", map[string]any{"message": "still"}); res.IsError {
				t.Fatalf("echo after malformed messages: %q", text(res))
			}
			if st := h.gw.Status(context.Background()).Servers[0]; st.Restarts != 0 || st.State != stateReady {
				t.Errorf("malformed messages took the upstream down: %+v", st)
			}
			logs := h.logs.String()
			if n := strings.Count(logs, "malformed message from MCP upstream dropped"); n != 2 {
				t.Errorf("%d log lines about dropped messages, want 2:\n%s", n, logs)
			}
			if strings.Contains(logs, "this line is not JSON-RPC") != payloads || strings.Contains(logs, "sha256=") == payloads {
				t.Errorf("with payloads %v, the log quotes the line %v:\n%s", payloads, !payloads, logs)
			}
		})
	}
}

func TestGateway_UpstreamThatNeverStartsLeavesTheOthersServing(t *testing.T) {
	h := newHarness(t, stdioServer("local", "")+`      - name: broken
        namespace: test
        command: [/nonexistent/mcp-server]
        tools: [{name: echo}]
`)
	h.waitReady("local")
	st := h.waitFor("broken failing", func(st Status) bool {
		return st.Servers[1].State == stateRestarting && st.Servers[1].Restarts >= 2
	})
	if b := st.Servers[1]; b.Name != "broken" || !strings.Contains(b.LastError, "/nonexistent/mcp-server") {
		t.Errorf("status of the broken upstream = %+v", b)
	}
	c := h.connect()
	if got := c.tools(t); !slices.Contains(got, "echo") || slices.Contains(got, "broken__echo") {
		t.Errorf("tools = %v", got)
	}
	if res := c.call(t, "echo", map[string]any{"message": "x"}); res.IsError {
		t.Errorf("echo = %q", text(res))
	}
}

func TestGateway_HTTPUpstreamDownAndBack(t *testing.T) {
	up := newHTTPUpstream(t, "web", "")
	h := newHarness(t, httpServer("web", up.url(), ""))
	h.waitReady("web")
	c := h.connect()
	if res := c.call(t, "echo", map[string]any{"message": "1"}); res.IsError {
		t.Fatal(text(res))
	}
	up.stop()
	res := c.call(t, "echo", map[string]any{"message": "2"})
	if !res.IsError {
		t.Fatalf("a call to a stopped HTTP upstream = %q", text(res))
	}
	h.waitFor("web down", func(st Status) bool { return st.Servers[0].State == stateRestarting })
	up.start()
	h.waitFor("web back", func(st Status) bool { return st.Servers[0].State == stateReady })
	if res := c.call(t, "echo", map[string]any{"message": "3"}); res.IsError {
		t.Fatalf("echo after the upstream came back: %q", text(res))
	}
}

func TestGateway_CancelledCallIsCancelledUpstream(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	c := h.connect()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, callParams("slow", map[string]any{"steps": 100, "delay_ms": 50}, "tok"))
		done <- err
	}()
	select { // the first progress notification: the call runs upstream
	case <-c.progress:
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification")
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	h.waitUpstreamSaw("local slow cancelled")
	rec := h.waitRecord(c.requestID(), func(n int) bool { return n == 1 })
	if r := rec.Result.Steps[0]; r.Success || !strings.Contains(r.Error, "cancelled by the client") {
		t.Errorf("the cancelled call's step result = %+v", r)
	}
}

// TestGateway_ProgressReachesTheCallingClient: the upstream's progress notifications
// reach the calling client with its own token, on the call's own event stream (this
// client opens no standalone stream), and no other session.
func TestGateway_ProgressReachesTheCallingClient(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	progress := make(chan *mcp.ProgressNotificationParams, 16)
	sdk := mcp.NewClient(&mcp.Implementation{Name: "progress", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress <- req.Params },
	})
	cs, err := sdk.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	other := h.connect()
	// Each step's notification goes out 30ms before the next step, or the answer.
	res, err := cs.CallTool(context.Background(), callParams("slow", map[string]any{"steps": 3, "delay_ms": 30}, "my-token"))
	if err != nil || res.IsError {
		t.Fatalf("slow: %v %q", err, text(res))
	}
	for i := 1; i <= 3; i++ {
		select {
		case p := <-progress:
			if p.ProgressToken != "my-token" || p.Progress != float64(i) || p.Total != 3 {
				t.Errorf("progress %d = %+v", i, p)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("progress %d did not arrive", i)
		}
	}
	select {
	case p := <-other.progress:
		t.Errorf("another session got progress %+v", p)
	default:
	}
}
