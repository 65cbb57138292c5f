package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/internal/capture"
)

// otlpCollector is a loopback OTLP/HTTP collector stand-in: the bodies posted to
// /v1/traces, concatenated.
func otlpCollector(t *testing.T) (url string, received func() []byte) {
	var mu sync.Mutex
	var buf bytes.Buffer
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.URL.Path == "/v1/traces" {
			buf.Write(body)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(collector.Close)
	return collector.URL, func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return bytes.Clone(buf.Bytes())
	}
}

// A stage call's W3C traceparent header puts the request's spans in the caller's
// trace: the exported spans carry its trace id, and the request that after_synthesis
// completes is one invoke_agent span whose parent is the caller's span.
func TestServe_StageCallsJoinTheCallersTrace(t *testing.T) {
	url, received := otlpCollector(t)
	d := startDaemonEnv(t, []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + url,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY=50",
	}, filepath.Join(repoRoot(t), "examples", "stock-agent"))
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if code, body := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"joined","request":"q","metadata":{"tenant":"acme"}}`,
		"traceparent", traceparent); code != 200 {
		t.Fatalf("before_planning = %d %s", code, body)
	}
	if code, body := d.do(t, "POST", "/v1/hooks/after_synthesis", `{"request_id":"joined","response":"done"}`, "traceparent", traceparent); code != 200 {
		t.Fatalf("after_synthesis = %d %s", code, body)
	}
	d.stop(t) // shutdown flushes the batch exporter
	got := received()
	traceID, _ := hex.DecodeString("4bf92f3577b34da6a3ce929d0e0e4736")
	callerSpan, _ := hex.DecodeString("00f067aa0ba902b7")
	for name, want := range map[string][]byte{"the caller's trace id": traceID, "the caller's span id": callerSpan,
		"an invoke_agent span": []byte("invoke_agent"), "a stage call's span": []byte("pipeline.stage.after_synthesis")} {
		if !bytes.Contains(got, want) {
			t.Errorf("exported traces lack %s (%d bytes received)", name, len(got))
		}
	}
}

// TestServe_ExportsTracesByOTLP points the standard OTEL_EXPORTER_OTLP_ENDPOINT at a
// loopback collector stand-in and checks that the hook spans arrive there.
func TestServe_ExportsTracesByOTLP(t *testing.T) {
	var mu sync.Mutex
	var received bytes.Buffer
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.URL.Path == "/v1/traces" {
			received.Write(body)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	d := startDaemonEnv(t, []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY=50",
	}, filepath.Join(repoRoot(t), "examples", "stock-agent"))
	if code, body := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"traced","request":"q","metadata":{"tenant":"acme"}}`); code != 200 {
		t.Fatalf("before_planning = %d %s", code, body)
	}
	d.stop(t) // shutdown flushes the batch exporter
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"pipeline.hook.before_planning.tenant-context", "pipeline.hook.failure_policy", "agentd"} {
		if !bytes.Contains(received.Bytes(), []byte(want)) {
			t.Errorf("exported traces lack %q (%d bytes received)", want, received.Len())
		}
	}
}

// `agentd mcp` traces as `serve` does: a client's tools/call with trace context in
// params._meta is exported as the gateway's server span "tools/call get-sum" in the
// client's trace, with the client span of the upstream call beside it.
func TestMCP_StdioExportsMCPSpans(t *testing.T) {
	requireMCPTools(t)
	url, received := otlpCollector(t)
	cmd := exec.Command(binary, "mcp", "--config", filepath.Join(repoRoot(t), "examples/mcp-gateway"), "--watch=false")
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_BSP_SCHEDULE_DELAY=50")
	stderr := &capture.Buffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "trace-check", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"},
		Name: "get-sum", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || res.IsError {
		t.Fatalf("get-sum: %v %+v\n%s", err, res, stderr)
	}
	if err := cs.Close(); err != nil { // agentd mcp exits, flushing its spans
		t.Errorf("close: %v\n%s", err, stderr)
	}
	_ = cmd.Wait()
	got := received()
	id, _ := hex.DecodeString(traceID)
	for name, want := range map[string][]byte{"the client's trace id": id, "the tools/call span": []byte("tools/call get-sum"),
		"mcp.method.name": []byte("mcp.method.name"), "network.transport": []byte("pipe")} {
		if !bytes.Contains(got, want) {
			t.Errorf("exported traces lack %s (%d bytes received)\n%s", name, len(got), stderr)
		}
	}
}

// The daemon's MCP gateway traces over streamable HTTP: a tools/call with trace
// context in params._meta is exported as its server span in the client's trace, and
// the HTTP request's own traceparent as a link (its span id is in the export too).
func TestServe_MCPGatewayExportsMCPSpans(t *testing.T) {
	requireMCPTools(t)
	url, received := otlpCollector(t)
	d := startDaemonEnv(t, []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + url,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY=50",
	}, filepath.Join(repoRoot(t), "examples/mcp-gateway"))
	const traceID, httpSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "0123456789abcdef"
	httpClient := &http.Client{Transport: withTraceparent("00-" + traceID + "-" + httpSpan + "-01")}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "trace-check", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url + "/mcp", HTTPClient: httpClient, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("session: %v\n%s", err, d.stderr)
	}
	deadline := time.Now().Add(30 * time.Second)
	var res *mcp.CallToolResult
	for res == nil || refusal(res) == "unknown_tool" && time.Now().Before(deadline) { // until the upstream is ready
		if res, err = cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"},
			Name: "get-sum", Arguments: map[string]any{"a": 1, "b": 2}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res.IsError {
		t.Fatalf("get-sum: %+v", res.Content[0])
	}
	_ = cs.Close()
	d.stop(t) // shutdown flushes the batch exporter
	got := received()
	id, _ := hex.DecodeString(traceID)
	link, _ := hex.DecodeString(httpSpan)
	for name, want := range map[string][]byte{"the client's trace id": id, "the HTTP request's span (a link)": link,
		"the tools/call span": []byte("tools/call get-sum"), "mcp.session.id": []byte("mcp.session.id")} {
		if !bytes.Contains(got, want) {
			t.Errorf("exported traces lack %s (%d bytes received)", name, len(got))
		}
	}
}

// withTraceparent sends its traceparent header on every request.
type withTraceparent string

func (tp withTraceparent) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Traceparent", string(tp))
	return http.DefaultTransport.RoundTrip(r)
}
