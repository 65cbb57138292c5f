package op_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/engine/op"
)

// guardSet builds a runner whose guards for tool_call are checks, in order, after a
// turn-only guard at index 0 (so Set indices and per-operation positions differ). It
// returns the names of the guards that ran.
func guardSet(t *testing.T, checks ...op.GuardFunc) (*op.Runner, *logRecorder, *[]string) {
	t.Helper()
	ran := &[]string{}
	guards := []op.Guard{allow("turn_only", op.Turn)}
	for i, check := range checks {
		name := fmt.Sprintf("g%d", i+1)
		guards = append(guards, op.Guard{Name: name, Operations: []op.Operation{op.ToolCall},
			Check: func(ctx context.Context, c op.Call) error {
				*ran = append(*ran, name)
				return check(ctx, c)
			}})
	}
	r, logs := mustCompile(t, op.Set{PolicyRevision: "rev-7", Guards: guards})
	return r, logs, ran
}

func allowAll(context.Context, op.Call) error { return nil }

func TestRunner_GuardNilAllows(t *testing.T) {
	r, _, ran := guardSet(t, allowAll, allowAll)
	_, finish, err := r.Start(context.Background(), toolCall())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	finish(op.Result{Outcome: op.Completed})
	if !reflect.DeepEqual(*ran, []string{"g1", "g2"}) {
		t.Fatalf("ran = %v", *ran)
	}
}

func TestRunner_GuardDenyStopsLaterGuards(t *testing.T) {
	deny := func(context.Context, op.Call) error {
		return op.Deny("trade_limit", "trades above 10000 need approval")
	}
	r, _, ran := guardSet(t, allowAll, deny, allowAll)
	_, finish, err := r.Start(context.Background(), toolCall())
	if finish == nil {
		t.Fatal("no finish after a denial")
	}
	finish(op.Result{Outcome: op.Denied, Err: err})
	d, ok := op.AsDenial(err)
	if !ok || d.Code != "trade_limit" || d.Reason != "trades above 10000 need approval" {
		t.Fatalf("err = %v, want the denial", err)
	}
	if _, isGuardErr := op.AsGuardError(err); isGuardErr {
		t.Fatal("a denial must not be a *GuardError")
	}
	if !reflect.DeepEqual(*ran, []string{"g1", "g2"}) {
		t.Fatalf("ran = %v, want [g1 g2]", *ran)
	}
}

func TestRunner_GuardWrappedDenialIsDenial(t *testing.T) {
	wrapped := func(context.Context, op.Call) error {
		return fmt.Errorf("limits: %w", op.Deny("trade_limit", "too big"))
	}
	r, _, _ := guardSet(t, wrapped)
	_, _, err := r.Start(context.Background(), toolCall())
	if d, ok := err.(*op.Denial); !ok || d.Code != "trade_limit" {
		t.Fatalf("err = %#v, want a *Denial", err)
	}
}

func TestRunner_GuardErrorFailsClosed(t *testing.T) {
	broken := errors.New("policy store unreachable")
	fail := func(context.Context, op.Call) error { return broken }
	r, _, ran := guardSet(t, allowAll, fail, allowAll)
	_, finish, err := r.Start(context.Background(), toolCall())
	finish(op.Result{Outcome: op.Failed, Err: err})
	g, ok := op.AsGuardError(err)
	if !ok {
		t.Fatalf("err = %v, want *GuardError", err)
	}
	if g.Operation != op.ToolCall || g.Index != 2 || g.Guard != "g2" || !errors.Is(err, broken) {
		t.Fatalf("guard error = %+v", g)
	}
	if _, isDenial := op.AsDenial(err); isDenial {
		t.Fatal("a guard failure must not be a denial")
	}
	if !reflect.DeepEqual(*ran, []string{"g1", "g2"}) {
		t.Fatalf("ran = %v, want [g1 g2]", *ran)
	}
}

func TestRunner_GuardPanicIsGuardError(t *testing.T) {
	boom := func(context.Context, op.Call) error {
		panic(op.Deny("sneaky", "a panicking guard cannot deny"))
	}
	r, logs, ran := guardSet(t, boom, allowAll)
	_, _, err := r.Start(context.Background(), toolCall())
	g, ok := op.AsGuardError(err)
	if !ok || g.Index != 1 || g.Guard != "g1" {
		t.Fatalf("err = %v, want *GuardError for g1", err)
	}
	var pe *op.PanicError
	if !errors.As(err, &pe) || pe.Value == nil {
		t.Fatalf("cause = %#v, want *PanicError with the value", g.Cause)
	}
	if _, isDenial := op.AsDenial(err); isDenial {
		t.Fatal("a panic value must not surface as a denial")
	}
	if !reflect.DeepEqual(*ran, []string{"g1"}) {
		t.Fatalf("ran = %v, want [g1]", *ran)
	}
	if attrs, found := logs.find(slog.LevelError, "op: guard callback panicked"); !found || attrs["callback"] != "g1" {
		t.Fatalf("guard panic not logged: %v", attrs)
	}
}

func TestRunner_GuardInvalidDenialIsGuardError(t *testing.T) {
	for name, check := range map[string]op.GuardFunc{
		"deny_with_bad_code": func(context.Context, op.Call) error { return op.Deny("Bad Code", "reason") },
		"hand_built_denial":  func(context.Context, op.Call) error { return &op.Denial{Code: "ok", Reason: "line\nbreak"} },
		"wrapped_bad_denial": func(context.Context, op.Call) error { return fmt.Errorf("w: %w", &op.Denial{}) },
		"typed_nil_denial":   func(context.Context, op.Call) error { return (*op.Denial)(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			r, _, _ := guardSet(t, check)
			_, _, err := r.Start(context.Background(), toolCall())
			if _, ok := op.AsGuardError(err); !ok {
				t.Fatalf("err = %v, want *GuardError", err)
			}
			if _, isDenial := op.AsDenial(err); isDenial {
				t.Fatalf("invalid denial surfaced as a denial: %v", err)
			}
			_ = err.Error()
		})
	}
}

func TestRunner_GuardSeesFinalContextAndRunsAfterBegin(t *testing.T) {
	var seen any
	r, _ := mustCompile(t, op.Set{
		PolicyRevision: "rev-1",
		Arounds: []op.Around{{Name: "tag", Operations: []op.Operation{op.ToolCall},
			Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
				return context.WithValue(ctx, ctxKey("tenant"), "acme"), nil
			}}},
		Guards: []op.Guard{{Name: "g", Operations: []op.Operation{op.ToolCall},
			Check: func(ctx context.Context, _ op.Call) error {
				seen = ctx.Value(ctxKey("tenant"))
				return nil
			}}},
	})
	if _, _, err := r.Start(context.Background(), toolCall()); err != nil || seen != "acme" {
		t.Fatalf("err = %v, guard saw %v; want nil, acme", err, seen)
	}
}

// ReadsStep names the operations some observer or guard that may read the step takes,
// and no others: a guard marked IgnoresStep does not count.
func TestRunner_ReadsStepOfOperationsWithObserversOrGuards(t *testing.T) {
	var mu sync.Mutex
	var log []string
	allow := func(context.Context, op.Call) error { return nil }
	r, _ := mustCompile(t, op.Set{
		PolicyRevision: "rev-1",
		Arounds:        []op.Around{observer("o", &mu, &log, op.Turn)},
		Guards: []op.Guard{
			{Name: "g", Operations: []op.Operation{op.ToolCall}, Check: allow},
			{Name: "blind", Operations: []op.Operation{op.ToolCall, op.Inference}, Check: allow, IgnoresStep: true},
		},
	})
	for o, want := range map[op.Operation]bool{op.ToolCall: true, op.Turn: true, op.Inference: false, op.Planning: false} {
		if got := r.ReadsStep(o); got != want {
			t.Errorf("ReadsStep(%s) = %v, want %v", o, got, want)
		}
	}
	if (*op.Runner)(nil).ReadsStep(op.ToolCall) {
		t.Error("a nil runner reads steps")
	}
}

// A read-only guard gets the runner's call itself (no copy); the others keep getting
// their own copies.
func TestRunner_ReadOnlyGuardsShareTheCall(t *testing.T) {
	call := toolCall()
	call.Parameters = map[string]any{"qty": 1.0}
	var got []map[string]any
	guard := func(name string, readOnly bool) op.Guard {
		return op.Guard{Name: name, Operations: []op.Operation{op.ToolCall}, ReadOnly: readOnly,
			Check: func(_ context.Context, c op.Call) error { got = append(got, c.Parameters); return nil }}
	}
	r, _ := mustCompile(t, op.Set{PolicyRevision: "rev-1", Guards: []op.Guard{guard("reads", true), guard("copies", false)}})
	if _, _, err := r.Start(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	same := func(m map[string]any) bool {
		return reflect.ValueOf(m).Pointer() == reflect.ValueOf(call.Parameters).Pointer()
	}
	if len(got) != 2 || !same(got[0]) || same(got[1]) {
		t.Fatalf("the read-only guard shares the call's parameters: %v, the other: %v", same(got[0]), len(got) > 1 && same(got[1]))
	}
}
