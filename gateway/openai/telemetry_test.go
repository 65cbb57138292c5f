package openai

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentd-dev/agentd/engine"
)

// The upstream call is a chat {model} client span in the request's trace, with the
// GenAI provider and request model attributes.
func TestGateway_UpstreamCallIsAChatSpan(t *testing.T) {
	up := scriptedUpstream(t)
	g := newTestGateway(t, exampleGeneration(t, up.URL+"/v1", ""), 0)
	sr := tracetest.NewSpanRecorder()
	g.tracer = tracerOf(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)))
	rec := httptest.NewRecorder()
	g.chat(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-test","messages":[{"role":"user","content":"quote ACME"}]}`)))
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	spans := sr.Ended()
	if len(spans) != 1 || spans[0].Name() != "chat gpt-test" {
		t.Fatalf("spans %v, want one chat gpt-test", spans)
	}
	a := map[string]string{}
	for _, kv := range spans[0].Attributes() {
		a[string(kv.Key)] = kv.Value.String()
	}
	id := rec.Header().Get("X-Request-Id")
	if a[engine.AttrGenAIOperation] != "chat" || a[attrProvider] != "openai" || a[attrRequestModel] != "gpt-test" || a[engine.AttrGenAIConversationID] != id {
		t.Errorf("attributes %v", a)
	}
	if spans[0].SpanContext().TraceID() != engine.RequestSpanContext(id).TraceID() {
		t.Errorf("the chat span is not in request %s's trace", id)
	}
}

// A call carrying the caller's trace context (the daemon's server reads its
// traceparent header) puts the chat span in the caller's trace, under the request's
// invoke_agent span id.
func TestGateway_ChatSpanJoinsTheCallersTrace(t *testing.T) {
	up := scriptedUpstream(t)
	g := newTestGateway(t, exampleGeneration(t, up.URL+"/v1", ""), 0)
	sr := tracetest.NewSpanRecorder()
	g.tracer = tracerOf(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)))
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 9}, SpanID: trace.SpanID{0xf0, 7},
		TraceFlags: trace.FlagsSampled, Remote: true})
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-test","messages":[{"role":"user","content":"quote ACME"}]}`))
	req = req.WithContext(trace.ContextWithRemoteSpanContext(req.Context(), caller))
	rec := httptest.NewRecorder()
	g.chat(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	spans := sr.Ended()
	if len(spans) != 1 {
		t.Fatalf("spans %v, want one", spans)
	}
	id := rec.Header().Get("X-Request-Id")
	if s := spans[0]; s.SpanContext().TraceID() != caller.TraceID() || s.Parent().SpanID() != engine.RequestSpanContext(id).SpanID() {
		t.Errorf("chat span in %s under %s, want the caller's trace %s under request %s's span", s.SpanContext().TraceID(), s.Parent().SpanID(), caller.TraceID(), id)
	}
}
