package op_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/engine/op"
)

func TestRunner_BeginRunsInRegistrationOrder(t *testing.T) {
	var mu sync.Mutex
	var log []string
	r, _ := mustCompile(t, op.Set{
		PolicyRevision: "rev-1",
		Arounds: []op.Around{
			observer("a", &mu, &log, op.ToolCall),
			observer("other", &mu, &log, op.Turn),
			observer("b", &mu, &log, op.Turn, op.ToolCall),
			observer("c", &mu, &log, op.ToolCall),
		},
		Guards: []op.Guard{{Name: "g", Operations: []op.Operation{op.ToolCall}, Check: func(context.Context, op.Call) error {
			log = append(log, "guard")
			return nil
		}}},
	})
	_, finish, err := r.Start(context.Background(), toolCall())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	finish(op.Result{Outcome: op.Completed})
	want := []string{"a", "b", "c", "guard", "finish:c", "finish:b", "finish:a"}
	if !reflect.DeepEqual(log, want) {
		t.Fatalf("order = %v, want %v", log, want)
	}
}

func TestRunner_BeginReceivesPreviousContext(t *testing.T) {
	add := op.Around{Name: "add", Operations: []op.Operation{op.ToolCall},
		Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
			return context.WithValue(ctx, ctxKey("span"), "s1"), nil
		}}
	var seen any
	read := op.Around{Name: "read", Operations: []op.Operation{op.ToolCall},
		Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
			seen = ctx.Value(ctxKey("span"))
			return ctx, nil
		}}
	r, _ := mustCompile(t, op.Set{Arounds: []op.Around{add, read}})
	next, finish, err := r.Start(context.Background(), toolCall())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer finish(op.Result{Outcome: op.Completed})
	if seen != "s1" || next.Value(ctxKey("span")) != "s1" {
		t.Fatalf("second begin saw %v, operation sees %v; want s1 for both", seen, next.Value(ctxKey("span")))
	}
}

func TestRunner_EachCallbackGetsOwnCopy(t *testing.T) {
	call := toolCall()
	call.Parameters = map[string]any{"order": map[string]any{"qty": 10.0}, "tags": []any{"a"}}
	call.Metadata = map[string]any{"tenant": "acme"}
	original := call.Clone()

	var mu sync.Mutex
	var seen []op.Call
	// Every callback records what it received, then vandalises its copy.
	look := func(c op.Call) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c.Clone())
		c.Parameters["order"].(map[string]any)["qty"] = -1.0
		c.Parameters["tags"].([]any)[0] = "changed"
		c.Metadata["tenant"] = "evil"
		c.StepID = "changed"
	}
	around := func(name string) op.Around {
		return op.Around{Name: name, Operations: []op.Operation{op.ToolCall},
			Begin: func(ctx context.Context, c op.Call) (context.Context, op.FinishFunc) {
				look(c)
				return ctx, func(res op.Result) { look(res.Call) }
			}}
	}
	guard := func(name string) op.Guard {
		return op.Guard{Name: name, Operations: []op.Operation{op.ToolCall},
			Check: func(_ context.Context, c op.Call) error { look(c); return nil }}
	}
	r, _ := mustCompile(t, op.Set{
		PolicyRevision: "rev-1",
		Arounds:        []op.Around{around("a"), around("b")},
		Guards:         []op.Guard{guard("g1"), guard("g2")},
	})
	_, finish, err := r.Start(context.Background(), call)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	finish(op.Result{Call: call, Outcome: op.Completed})

	if len(seen) != 6 {
		t.Fatalf("%d callbacks ran, want 6", len(seen))
	}
	for i, c := range seen {
		if !reflect.DeepEqual(c, original) {
			t.Errorf("callback %d saw %+v, want %+v", i, c, original)
		}
	}
	if !reflect.DeepEqual(call, original) {
		t.Errorf("caller's call changed to %+v", call)
	}
}

func TestRunner_BeginPanicIsLoggedAndSkipped(t *testing.T) {
	var finished []string
	boom := op.Around{Name: "boom", Operations: []op.Operation{op.ToolCall},
		Begin: func(context.Context, op.Call) (context.Context, op.FinishFunc) { panic("kaboom") }}
	ok := op.Around{Name: "ok", Operations: []op.Operation{op.ToolCall},
		Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
			return ctx, func(op.Result) { finished = append(finished, "ok") }
		}}
	r, logs := mustCompile(t, op.Set{Arounds: []op.Around{boom, ok}})
	_, finish, err := r.Start(context.Background(), toolCall())
	if err != nil {
		t.Fatalf("Start: %v, want nil (observers fail open)", err)
	}
	finish(op.Result{Outcome: op.Completed})
	if !reflect.DeepEqual(finished, []string{"ok"}) {
		t.Fatalf("finished = %v, want [ok]", finished)
	}
	attrs, found := logs.find(slog.LevelError, "op: begin callback panicked")
	if !found {
		t.Fatal("begin panic was not logged")
	}
	if attrs["callback"] != "boom" || attrs["index"] != "0" || attrs["panic"] != "kaboom" ||
		attrs["operation"] != "tool_call" || attrs["stack"] == "" {
		t.Fatalf("log attributes = %v", attrs)
	}
}

func TestRunner_NilContextKeepsPrior(t *testing.T) {
	var finished bool
	var seen any
	add := op.Around{Name: "add", Operations: []op.Operation{op.Turn},
		Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
			return context.WithValue(ctx, ctxKey("k"), "v"), nil
		}}
	nilCtx := op.Around{Name: "nil_ctx", Operations: []op.Operation{op.Turn},
		Begin: func(context.Context, op.Call) (context.Context, op.FinishFunc) {
			return nil, func(op.Result) { finished = true }
		}}
	read := op.Around{Name: "read", Operations: []op.Operation{op.Turn},
		Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
			seen = ctx.Value(ctxKey("k"))
			return ctx, nil
		}}
	r, logs := mustCompile(t, op.Set{Arounds: []op.Around{add, nilCtx, read}})
	next, finish, err := r.Start(context.Background(), op.Call{Operation: op.Turn, RequestID: "r"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if next == nil || seen != "v" || next.Value(ctxKey("k")) != "v" {
		t.Fatalf("prior context not kept: next=%v seen=%v", next, seen)
	}
	finish(op.Result{Outcome: op.Completed})
	if !finished {
		t.Error("the finish returned alongside a nil context did not run")
	}
	attrs, found := logs.find(slog.LevelWarn, "op: begin returned a nil context; keeping the prior one")
	if !found || attrs["callback"] != "nil_ctx" || attrs["index"] != "1" {
		t.Fatalf("nil context not logged as expected: %v (found %v)", attrs, found)
	}
}

func TestRunner_ObserveOnlyOperationRunsArounds(t *testing.T) {
	var mu sync.Mutex
	var log []string
	r, _ := mustCompile(t, op.Set{Arounds: []op.Around{observer("o", &mu, &log, op.Planning, op.Synthesis)}})
	for _, o := range []op.Operation{op.Planning, op.Synthesis} {
		_, finish, err := r.Start(context.Background(), op.Call{Operation: o, RequestID: "r"})
		if err != nil {
			t.Fatalf("Start(%s): %v", o, err)
		}
		finish(op.Result{Outcome: op.Completed})
	}
	if want := []string{"o", "finish:o", "o", "finish:o"}; !reflect.DeepEqual(log, want) {
		t.Fatalf("log = %v, want %v", log, want)
	}
}

func TestRunner_InvalidCallReturnsCallErrorNoFinish(t *testing.T) {
	called := false
	r, _ := mustCompile(t, op.Set{Arounds: []op.Around{{Name: "o", Operations: []op.Operation{op.ToolCall},
		Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
			called = true
			return ctx, nil
		}}}})
	bad := toolCall()
	bad.Capability = ""
	for name, runner := range map[string]*op.Runner{"compiled": r, "nil": nil} {
		ctx := context.Background()
		next, finish, err := runner.Start(ctx, bad)
		var ce *op.CallError
		if !errors.As(err, &ce) || ce.Field != "capability" {
			t.Fatalf("%s runner: err = %v, want *CallError on capability", name, err)
		}
		if finish != nil || next != ctx {
			t.Fatalf("%s runner: finish = %p, ctx changed = %v; want nil finish, same ctx", name, finish, next != ctx)
		}
	}
	if called {
		t.Fatal("begin ran for an invalid call")
	}
}

func TestRunner_NilRunnerIsNoop(t *testing.T) {
	var r *op.Runner
	ctx := context.WithValue(context.Background(), ctxKey("k"), 1)
	next, finish, err := r.Start(ctx, toolCall())
	if err != nil || finish == nil || next != ctx {
		t.Fatalf("Start on nil runner = (%v, %p, %v), want (ctx, no-op, nil)", next, finish, err)
	}
	finish(op.Result{Outcome: op.Completed})
}

func TestRunner_UnhandledOperationIsNoop(t *testing.T) {
	var mu sync.Mutex
	var log []string
	r, _ := mustCompile(t, op.Set{Arounds: []op.Around{observer("o", &mu, &log, op.Turn)}})
	ctx := context.Background()
	next, finish, err := r.Start(ctx, op.Call{Operation: op.Inference, RequestID: "r", Model: "m"})
	if err != nil || finish == nil || next != ctx {
		t.Fatalf("Start = (%v, %p, %v), want (ctx, no-op, nil)", next, finish, err)
	}
	finish(op.Result{Outcome: op.Completed})
	if len(log) != 0 {
		t.Fatalf("observer for turn ran for inference: %v", log)
	}
}

// funcCtx is a context type that cannot be compared with ==.
type funcCtx struct {
	context.Context
	hook func()
}

func TestRunner_NonComparableContextIsNotCompared(t *testing.T) {
	r, _ := mustCompile(t, op.Set{Arounds: []op.Around{{Name: "wrap", Operations: []op.Operation{op.Turn},
		Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
			return funcCtx{Context: context.WithValue(ctx, ctxKey("k"), "v")}, nil
		}}}})
	parent := funcCtx{Context: context.Background(), hook: func() {}}
	next, finish, err := r.Start(parent, op.Call{Operation: op.Turn, RequestID: "r"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer finish(op.Result{Outcome: op.Completed})
	if next.Value(ctxKey("k")) != "v" {
		t.Fatal("observer's value lost")
	}
}
