package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// A client's params._meta is untrusted JSON: whatever it holds, reading its trace
// context never panics, and a trace context it yields is valid and survives being put
// in another message's _meta (as the gateway does for an upstream) unchanged.
func FuzzMetaTraceContext(f *testing.F) {
	f.Add(`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"}`)
	f.Add(`{"traceparent":"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}`)
	f.Add(`{"traceparent":"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`)
	f.Add(`{"traceparent":7,"tracestate":["x"]}`)
	f.Add(`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00","progressToken":1}`)
	f.Fuzz(func(t *testing.T, data string) {
		var meta map[string]any
		if json.Unmarshal([]byte(data), &meta) != nil {
			return
		}
		sc := metaTraceContext(meta)
		if !sc.IsValid() {
			return
		}
		if !sc.IsRemote() {
			t.Fatalf("%s: a trace context from _meta is not remote", data)
		}
		out := metaCarrier{}
		traceContext.Inject(trace.ContextWithSpanContext(context.Background(), sc), out)
		if again := metaTraceContext(out); !again.Equal(sc) {
			t.Fatalf("%s: %v does not survive _meta: %v", data, sc, again)
		}
	})
}
