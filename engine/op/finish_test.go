package op_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine/op"
)

func TestRunner_FinishRunsInReverseOnce(t *testing.T) {
	var mu sync.Mutex
	var log []string
	r, _ := mustCompile(t, op.Set{Arounds: []op.Around{
		observer("a", &mu, &log, op.Turn),
		observer("b", &mu, &log, op.Turn),
		observer("c", &mu, &log, op.Turn),
	}})
	_, finish, err := r.Start(context.Background(), op.Call{Operation: op.Turn, RequestID: "r"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { finish(op.Result{Outcome: op.Completed}) })
	}
	wg.Wait()
	finish(op.Result{Outcome: op.Failed})
	want := []string{"a", "b", "c", "finish:c", "finish:b", "finish:a"}
	if !reflect.DeepEqual(log, want) {
		t.Fatalf("log = %v, want %v", log, want)
	}
}

func TestRunner_FinishRunsAfterDenial(t *testing.T) {
	var got []op.Result
	r, _ := mustCompile(t, op.Set{
		PolicyRevision: "rev-1",
		Arounds: []op.Around{{Name: "audit", Operations: []op.Operation{op.ToolCall},
			Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
				return ctx, func(res op.Result) { got = append(got, res) }
			}}},
		Guards: []op.Guard{{Name: "limit", Operations: []op.Operation{op.ToolCall},
			Check: func(context.Context, op.Call) error { return op.Deny("trade_limit", "too big") }}},
	})
	_, finish, err := r.Start(context.Background(), toolCall())
	if _, ok := op.AsDenial(err); !ok || finish == nil {
		t.Fatalf("Start = (finish %p, %v), want a finish and a denial", finish, err)
	}
	finish(op.Result{Outcome: op.Denied, Err: err})
	if len(got) != 1 || got[0].Outcome != op.Denied || !errors.Is(got[0].Err, err) {
		t.Fatalf("finish callbacks saw %+v", got)
	}
}

func TestRunner_FinishPanicIsLoggedRestRun(t *testing.T) {
	var mu sync.Mutex
	var log []string
	boom := op.Around{Name: "boom", Operations: []op.Operation{op.Turn},
		Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
			return ctx, func(op.Result) { panic("finish exploded") }
		}}
	r, logs := mustCompile(t, op.Set{Arounds: []op.Around{
		observer("a", &mu, &log, op.Turn), boom, observer("c", &mu, &log, op.Turn),
	}})
	_, finish, _ := r.Start(context.Background(), op.Call{Operation: op.Turn, RequestID: "r"})
	finish(op.Result{Outcome: op.Completed})
	if want := []string{"a", "c", "finish:c", "finish:a"}; !reflect.DeepEqual(log, want) {
		t.Fatalf("log = %v, want %v", log, want)
	}
	attrs, found := logs.find(slog.LevelError, "op: finish callback panicked")
	if !found || attrs["callback"] != "boom" || attrs["index"] != "1" || attrs["panic"] != "finish exploded" {
		t.Fatalf("finish panic not logged as expected: %v", attrs)
	}
}

func TestRunner_FinishGetsOwnCopyOfResult(t *testing.T) {
	var seen []any
	around := func(name string) op.Around {
		return op.Around{Name: name, Operations: []op.Operation{op.ToolCall},
			Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
				return ctx, func(res op.Result) {
					seen = append(seen, res.Call.Parameters["qty"])
					res.Call.Parameters["qty"] = 0.0
				}
			}}
	}
	r, _ := mustCompile(t, op.Set{Arounds: []op.Around{around("a"), around("b")}})
	call := toolCall()
	call.Parameters = map[string]any{"qty": 10.0}
	_, finish, _ := r.Start(context.Background(), call)
	finish(op.Result{Call: call, Outcome: op.Completed})
	if !reflect.DeepEqual(seen, []any{10.0, 10.0}) || call.Parameters["qty"] != 10.0 {
		t.Fatalf("finish callbacks saw %v; caller's qty = %v", seen, call.Parameters["qty"])
	}
}

func TestRunner_FinishFillsZeroFields(t *testing.T) {
	var got op.Result
	r, _ := mustCompile(t, op.Set{Arounds: []op.Around{{Name: "o", Operations: []op.Operation{op.ToolCall},
		Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
			return ctx, func(res op.Result) { got = res }
		}}}})
	call := toolCall()
	_, finish, _ := r.Start(context.Background(), call)
	finish(op.Result{Outcome: op.Canceled})
	if !reflect.DeepEqual(got.Call, call) || got.StartedAt.IsZero() || got.EndedAt.IsZero() || got.Outcome != op.Canceled {
		t.Fatalf("result = %+v", got)
	}

	ended := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	_, finish, _ = r.Start(context.Background(), call)
	finish(op.Result{EndedAt: ended, Outcome: op.Completed})
	if !got.EndedAt.Equal(ended) {
		t.Fatalf("EndedAt = %v, want the caller's %v", got.EndedAt, ended)
	}
}

func TestRunner_ConcurrentOperationsShareRunner(t *testing.T) {
	var begun, finished, checked atomic.Int64
	r, _ := mustCompile(t, op.Set{
		PolicyRevision: "rev-1",
		Arounds: []op.Around{{Name: "count", Operations: []op.Operation{op.ToolCall},
			Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
				begun.Add(1)
				return context.WithoutCancel(ctx), func(op.Result) { finished.Add(1) }
			}}},
		Guards: []op.Guard{{Name: "count", Operations: []op.Operation{op.ToolCall},
			Check: func(context.Context, op.Call) error { checked.Add(1); return nil }}},
	})
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, finish, err := r.Start(ctx, toolCall())
			if err != nil {
				t.Errorf("Start: %v", err)
				return
			}
			finish(op.Result{Outcome: op.Completed})
		})
	}
	wg.Wait()
	if begun.Load() != 32 || finished.Load() != 32 || checked.Load() != 32 {
		t.Fatalf("begun %d, checked %d, finished %d; want 32 each", begun.Load(), checked.Load(), finished.Load())
	}
}
