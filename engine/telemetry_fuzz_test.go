package engine

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// A request state's traceparent is read back from a store: whatever it holds, reading
// it never panics, and what it yields is either invalid or a remote span context that
// traceParentOf writes back to a traceparent reading the same.
func FuzzParseTraceParent(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("00-00000000000000000000000000000000-00f067aa0ba902b7-01")
	f.Add("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-0A")
	f.Add("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-00")
	f.Fuzz(func(t *testing.T, s string) {
		sc := parseTraceParent(s)
		if !sc.IsValid() {
			return
		}
		if !sc.IsRemote() {
			t.Fatalf("%q: not remote", s)
		}
		out := traceParentOf(trace.ContextWithSpanContext(context.Background(), sc))
		if again := parseTraceParent(out); !again.Equal(sc) {
			t.Fatalf("%q read as %v, written as %q, read back as %v", s, sc, out, again)
		}
	})
}
