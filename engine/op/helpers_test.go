package op_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/engine/op"
)

// logRecorder is a slog.Handler that keeps every record for assertions.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// find returns the attributes of the first record at level with message msg.
func (h *logRecorder) find(level slog.Level, msg string) (map[string]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.Level != level || r.Message != msg {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		return attrs, true
	}
	return nil, false
}

// mustCompile compiles set, logging into a fresh recorder, and fails the test on error.
func mustCompile(t testing.TB, set op.Set) (*op.Runner, *logRecorder) {
	t.Helper()
	logs := &logRecorder{}
	r, err := op.Compile(set, op.WithLogger(slog.New(logs)))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return r, logs
}

// toolCall returns a valid tool_call.
func toolCall() op.Call {
	return op.Call{
		Operation:  op.ToolCall,
		RequestID:  "req-1",
		StepID:     "step-1",
		AgentName:  "broker",
		Capability: "place_order",
	}
}

// observer returns an Around for ops whose begin appends name to *log (under mu) and
// whose finish appends "finish:"+name.
func observer(name string, mu *sync.Mutex, log *[]string, ops ...op.Operation) op.Around {
	add := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		*log = append(*log, s)
	}
	return op.Around{Name: name, Operations: ops, Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
		add(name)
		return ctx, func(op.Result) { add("finish:" + name) }
	}}
}

func allow(name string, ops ...op.Operation) op.Guard {
	return op.Guard{Name: name, Operations: ops, Check: func(context.Context, op.Call) error { return nil }}
}

type ctxKey string
