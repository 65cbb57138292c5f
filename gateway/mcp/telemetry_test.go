package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentd-dev/agentd/engine"
)

// tracedHarness is newHarness with the gateway and the driver (its generations)
// tracing into the returned recorder, with the engine's IDGenerator as the daemon's
// provider has it.
func tracedHarness(t *testing.T, servers string) (*harness, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr), sdktrace.WithIDGenerator(engine.IDGenerator{}))
	h := newHarnessWith(t, servers, func(c *Config) { c.TracerProvider = tp })
	h.options.TracerProvider = tp
	h.configure(servers)
	return h, sr
}

// spanAttrs reads a span's attributes as strings.
func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.String()
	}
	return m
}

// spansNamed returns the ended spans named name of kind.
func spansNamed(sr *tracetest.SpanRecorder, name string, kind trace.SpanKind) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == name && s.SpanKind() == kind {
			out = append(out, s)
		}
	}
	return out
}

// metaUpstream is an MCP server (the official Go SDK) over streamable HTTP whose echo
// tool answers with the traceparent of its call's params._meta.
func metaUpstream(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "meta-upstream", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tp}}}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A client's tools/call is a SERVER span "tools/call {tool}" whose parent is the trace
// context the client put in params._meta, with the conventions' attributes; the
// gateway's call to the upstream is a CLIENT span "tools/call {tool}" under it, whose
// trace context reaches the upstream in params._meta, with the JSON-RPC id and the
// server's address; the driver's spans of the call join the client's trace.
func TestTelemetry_MCPToolCallSpansAndMetaPropagation(t *testing.T) {
	h, sr := tracedHarness(t, httpServer("web", metaUpstream(t), ""))
	h.waitReady("web")
	c := h.connect()
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 1}, SpanID: trace.SpanID{0x00, 0xf0, 0x67, 2},
		TraceFlags: trace.FlagsSampled})
	traceparent := "00-" + caller.TraceID().String() + "-" + caller.SpanID().String() + "-01"
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Meta: mcp.Meta{"traceparent": traceparent}, Name: "echo",
		Arguments: map[string]any{"message": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call echo = %+v, %v", res, err)
	}

	servers := spansNamed(sr, "tools/call echo", trace.SpanKindServer)
	clients := spansNamed(sr, "tools/call echo", trace.SpanKindClient)
	if len(servers) != 1 || len(clients) != 1 {
		t.Fatalf("%d server and %d client tools/call echo spans, want 1 and 1", len(servers), len(clients))
	}
	srv, cli := servers[0], clients[0]
	if srv.SpanContext().TraceID() != caller.TraceID() || srv.Parent().SpanID() != caller.SpanID() || !srv.Parent().IsRemote() {
		t.Errorf("server span in %s under %s, want the client's %s under %s", srv.SpanContext().TraceID(), srv.Parent().SpanID(), caller.TraceID(), caller.SpanID())
	}
	a := spanAttrs(srv)
	for k, want := range map[attribute.Key]string{attrMCPMethod: "tools/call", engine.AttrGenAIToolName: "echo", engine.AttrGenAIOperation: "execute_tool",
		attrMCPSessionID: c.ID(), attrNetTransport: "tcp", attrNetProtocol: "http"} {
		if a[k] != want {
			t.Errorf("server span %s = %q, want %q", k, a[k], want)
		}
	}
	if a[attrMCPProtocol] == "" || a[engine.AttrErrorType] != "" {
		t.Errorf("server span: protocol version %q, error.type %q", a[attrMCPProtocol], a[engine.AttrErrorType])
	}

	if cli.Parent().SpanID() != srv.SpanContext().SpanID() || cli.SpanContext().TraceID() != caller.TraceID() {
		t.Errorf("client span under %s in %s, want under the server span %s", cli.Parent().SpanID(), cli.SpanContext().TraceID(), srv.SpanContext().SpanID())
	}
	a = spanAttrs(cli)
	for k, want := range map[attribute.Key]string{attrMCPMethod: "tools/call", engine.AttrGenAIToolName: "echo", engine.AttrGenAIOperation: "execute_tool",
		attrNetTransport: "tcp", attrNetProtocol: "http", attrServerAddress: "127.0.0.1"} {
		if a[k] != want {
			t.Errorf("client span %s = %q, want %q", k, a[k], want)
		}
	}
	if a[attrJSONRPCRequestID] == "" || a[attrServerPort] == "" || a[attrMCPSessionID] == "" || a[attrMCPProtocol] == "" {
		t.Errorf("client span lacks the request id, server port, session id or protocol version: %v", a)
	}
	wantMeta := "00-" + caller.TraceID().String() + "-" + cli.SpanContext().SpanID().String() + "-01"
	if got := text(res); got != wantMeta {
		t.Errorf("the upstream's params._meta traceparent = %q, want the client span's %q", got, wantMeta)
	}

	stages := 0
	for _, s := range sr.Ended() {
		if strings.HasPrefix(s.Name(), "pipeline.stage.") || s.Name() == "execute_tool echo" {
			stages++
			if s.SpanContext().TraceID() != caller.TraceID() {
				t.Errorf("driver span %q is not in the client's trace", s.Name())
			}
		}
	}
	if stages == 0 {
		t.Error("no driver span of the call")
	}
}

// Without trace context in params._meta, a session's calls are in its agentd
// request's trace; a call to a spawned upstream is a client span over a pipe with its
// JSON-RPC id; a refused call's server span says tool_error and never reaches an
// upstream.
func TestTelemetry_MCPSessionTraceAndRefusal(t *testing.T) {
	h, sr := tracedHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	c := h.connect()
	if res := c.call(t, "echo", map[string]any{"message": "hi"}); res.IsError {
		t.Fatalf("echo = %q", text(res))
	}
	if res := c.call(t, "echo", map[string]any{"message": "forbidden"}); refusalCode(res) != "forbidden_message" {
		t.Fatalf("forbidden echo = %q, want refused", text(res))
	}
	request := engine.RequestSpanContext(c.requestID())
	servers := spansNamed(sr, "tools/call echo", trace.SpanKindServer)
	clients := spansNamed(sr, "tools/call echo", trace.SpanKindClient)
	if len(servers) != 2 || len(clients) != 1 {
		t.Fatalf("%d server and %d client spans, want 2 and 1 (the refused call is not forwarded)", len(servers), len(clients))
	}
	for _, s := range servers {
		if s.SpanContext().TraceID() != request.TraceID() || s.Parent().SpanID() != request.SpanID() {
			t.Errorf("server span in %s under %s, want the request's %s under %s", s.SpanContext().TraceID(), s.Parent().SpanID(), request.TraceID(), request.SpanID())
		}
	}
	if a := spanAttrs(servers[0]); a[engine.AttrErrorType] != "" {
		t.Errorf("the allowed call's server span has error.type %q", a[engine.AttrErrorType])
	}
	if a := spanAttrs(servers[1]); a[engine.AttrErrorType] != errorToolError || servers[1].Status().Code.String() != "Error" {
		t.Errorf("the refused call's server span: %v %v, want error.type tool_error", a, servers[1].Status())
	}
	a := spanAttrs(clients[0])
	if a[attrNetTransport] != "pipe" || a[attrJSONRPCRequestID] == "" || a[attrNetProtocol] != "" {
		t.Errorf("stdio client span: %v, want network.transport pipe and a jsonrpc.request.id", a)
	}
	if clients[0].Parent().SpanID() != servers[0].SpanContext().SpanID() {
		t.Error("the stdio client span is not a child of the call's server span")
	}
	// the SDK's client opens with server/discover where the server supports it
	if len(spansNamed(sr, "initialize", trace.SpanKindServer)) != 1 || len(spansNamed(sr, "server/discover", trace.SpanKindClient))+len(spansNamed(sr, "initialize", trace.SpanKindClient)) == 0 {
		var names []string
		for _, s := range sr.Ended() {
			names = append(names, s.Name()+"/"+s.SpanKind().String())
		}
		t.Errorf("the handshakes are not spans: %v", names)
	}
}
