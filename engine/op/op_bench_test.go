package op_test

import (
	"context"
	"testing"

	"github.com/agentd-dev/agentd/engine/op"
)

// The four callbacks both benchmarks run: a tracing observer that adds a value, a
// metrics observer that keeps the context, and two guards that allow.
var (
	benchTrace op.BeginFunc = func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
		return context.WithValue(ctx, ctxKey("span"), "span-1"), benchFinish
	}
	benchMetrics op.BeginFunc = func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
		return ctx, benchFinish
	}
	benchGuard op.GuardFunc = func(_ context.Context, c op.Call) error {
		if c.Capability == "forbidden" {
			return op.Deny("forbidden", "capability is forbidden")
		}
		return nil
	}
	benchFinish op.FinishFunc = func(op.Result) {}
	benchSink   context.Context
)

func benchRunner(b *testing.B, trace op.BeginFunc) *op.Runner {
	ops := []op.Operation{op.ToolCall}
	r, err := op.Compile(op.Set{
		PolicyRevision: "bench-1",
		Arounds:        []op.Around{{Name: "trace", Operations: ops, Begin: trace}, {Name: "metrics", Operations: ops, Begin: benchMetrics}},
		Guards:         []op.Guard{{Name: "g1", Operations: ops, Check: benchGuard}, {Name: "g2", Operations: ops, Check: benchGuard}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func runBench(b *testing.B, r *op.Runner, call op.Call) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		next, finish, err := r.Start(ctx, call)
		if err != nil {
			b.Fatal(err)
		}
		benchSink = next
		finish(op.Result{Call: call, Outcome: op.Completed})
	}
}

func BenchmarkRunner_TwoObserversTwoGuards(b *testing.B) {
	runBench(b, benchRunner(b, benchTrace), toolCall())
}

func BenchmarkBaseline_TwoObserversTwoGuards(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	call := toolCall()
	b.ReportAllocs()
	for b.Loop() {
		c1, f1 := benchTrace(ctx, call)
		c2, f2 := benchMetrics(c1, call)
		if err := benchGuard(c2, call); err != nil {
			b.Fatal(err)
		}
		if err := benchGuard(c2, call); err != nil {
			b.Fatal(err)
		}
		benchSink = c2
		res := op.Result{Call: call, Outcome: op.Completed}
		f2(res)
		f1(res)
	}
}

// With parameters every callback gets its own deep copy.
func BenchmarkRunner_TwoObserversTwoGuardsWithParameters(b *testing.B) {
	call := toolCall()
	call.Parameters = map[string]any{"symbol": "ACME", "qty": 100.0, "limit": map[string]any{"px": 12.5}}
	runBench(b, benchRunner(b, benchTrace), call)
}

// A detached observer context costs a bridge with a cancellation link.
func BenchmarkRunner_DetachedObserver(b *testing.B) {
	detached := func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
		return context.WithoutCancel(ctx), benchFinish
	}
	runBench(b, benchRunner(b, detached), toolCall())
}
