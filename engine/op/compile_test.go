package op_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/engine/op"
)

func noopBegin(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) { return ctx, nil }

func around(name string, ops ...op.Operation) op.Around {
	return op.Around{Name: name, Operations: ops, Begin: noopBegin}
}

func TestCompile_Errors(t *testing.T) {
	cases := []struct {
		kind  op.ErrorKind
		index int
		set   op.Set
	}{
		{op.KindMissingRevision, -1, op.Set{Guards: []op.Guard{allow("g", op.Turn)}}},
		{op.KindInvalidRevision, -1, op.Set{PolicyRevision: strings.Repeat("r", 129), Guards: []op.Guard{allow("g", op.Turn)}}},
		{op.KindInvalidRevision, -1, op.Set{PolicyRevision: "rev\n1", Guards: []op.Guard{allow("g", op.Turn)}}},
		{op.KindInvalidRevision, -1, op.Set{PolicyRevision: "rev\xff", Guards: []op.Guard{allow("g", op.Turn)}}},
		{op.KindInvalidRevision, -1, op.Set{PolicyRevision: "   ", Guards: []op.Guard{allow("g", op.Turn)}}},
		{op.KindRevisionWithoutGuards, -1, op.Set{PolicyRevision: "rev-1", Arounds: []op.Around{around("a", op.Turn)}}},
		{op.KindMissingName, 1, op.Set{Arounds: []op.Around{around("a", op.Turn), around(" ", op.Turn)}}},
		{op.KindMissingName, 0, op.Set{PolicyRevision: "r", Guards: []op.Guard{allow("", op.Turn)}}},
		{op.KindNilCallback, 0, op.Set{Arounds: []op.Around{{Name: "a", Operations: []op.Operation{op.Turn}}}}},
		{op.KindNilCallback, 1, op.Set{PolicyRevision: "r", Guards: []op.Guard{
			allow("g", op.Turn), {Name: "nil", Operations: []op.Operation{op.Turn}}}}},
		{op.KindNoOperations, 0, op.Set{Arounds: []op.Around{around("a")}}},
		{op.KindNoOperations, 0, op.Set{PolicyRevision: "r", Guards: []op.Guard{allow("g")}}},
		{op.KindUnknownOperation, 0, op.Set{Arounds: []op.Around{around("a", "shell")}}},
		{op.KindUnknownOperation, 0, op.Set{PolicyRevision: "r", Guards: []op.Guard{allow("g", op.Turn, "")}}},
		{op.KindUnguardableOperation, 0, op.Set{PolicyRevision: "r", Guards: []op.Guard{allow("g", op.Planning)}}},
		{op.KindUnguardableOperation, 0, op.Set{PolicyRevision: "r", Guards: []op.Guard{allow("g", op.Turn, op.Synthesis)}}},
		{op.KindDuplicateOperation, 0, op.Set{Arounds: []op.Around{around("a", op.Turn, op.Inference, op.Turn)}}},
		{op.KindDuplicateOperation, 0, op.Set{PolicyRevision: "r", Guards: []op.Guard{allow("g", op.ToolCall, op.ToolCall)}}},
	}
	for _, tc := range cases {
		t.Run(string(tc.kind), func(t *testing.T) {
			r, err := op.Compile(tc.set)
			var ce *op.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *CompileError", err)
			}
			if ce.Kind != tc.kind || ce.Index != tc.index || r != nil {
				t.Fatalf("got kind %s index %d (runner %v), want %s index %d: %v", ce.Kind, ce.Index, r, tc.kind, tc.index, err)
			}
		})
	}
}

func TestCompile_Accepts(t *testing.T) {
	for name, set := range map[string]op.Set{
		"empty":                  {},
		"observe_only_arounds":   {Arounds: []op.Around{around("a", op.Planning, op.Synthesis, op.Turn)}},
		"revision_at_limit":      {PolicyRevision: strings.Repeat("r", op.MaxRevisionLen), Guards: []op.Guard{allow("g", op.Turn)}},
		"unicode_revision":       {PolicyRevision: "révision-7 ✓", Guards: []op.Guard{allow("g", op.Turn)}},
		"all_guardable":          {PolicyRevision: "r", Guards: []op.Guard{allow("g", op.Turn, op.Inference, op.ToolCall)}},
		"same_name_twice_is_ok":  {Arounds: []op.Around{around("a", op.Turn), around("a", op.Turn)}},
		"arounds_and_guards_mix": {PolicyRevision: "r", Arounds: []op.Around{around("a", op.Turn)}, Guards: []op.Guard{allow("g", op.ToolCall)}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := op.Compile(set); err != nil {
				t.Fatalf("Compile: %v", err)
			}
		})
	}
}

func TestCompile_CopiesCallerSlices(t *testing.T) {
	var mu sync.Mutex
	var log []string
	set := op.Set{
		PolicyRevision: "rev-1",
		Arounds:        []op.Around{observer("a", &mu, &log, op.ToolCall)},
		Guards:         []op.Guard{allow("g", op.ToolCall)},
	}
	r, _ := mustCompile(t, set)

	set.Arounds[0].Operations[0] = op.Turn
	set.Arounds[0].Begin = func(context.Context, op.Call) (context.Context, op.FinishFunc) { panic("replaced") }
	set.Arounds = append(set.Arounds, observer("late", &mu, &log, op.ToolCall))
	set.Guards[0].Check = func(context.Context, op.Call) error { return errors.New("replaced") }
	set.Guards[0].Operations[0] = op.Turn

	_, finish, err := r.Start(context.Background(), toolCall())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	finish(op.Result{Outcome: op.Completed})
	_, finish, err = r.Start(context.Background(), op.Call{Operation: op.Turn, RequestID: "req-1"})
	if err != nil {
		t.Fatalf("Start(turn): %v", err)
	}
	finish(op.Result{Outcome: op.Completed})
	if want := []string{"a", "finish:a"}; !reflect.DeepEqual(log, want) {
		t.Fatalf("log = %v, want %v: the runner saw the caller's later changes", log, want)
	}
}

// Each callback runs for the operations it lists and no other.
func TestRunner_RunsCallbacksOfTheirOperationsOnly(t *testing.T) {
	var mu sync.Mutex
	var log []string
	r, _ := mustCompile(t, op.Set{
		PolicyRevision: "rev-9",
		Arounds:        []op.Around{observer("a", &mu, &log, op.Planning)},
		Guards: []op.Guard{{Name: "g", Operations: []op.Operation{op.Inference}, Check: func(context.Context, op.Call) error {
			mu.Lock()
			defer mu.Unlock()
			log = append(log, "guard")
			return nil
		}}},
	})
	calls := map[op.Operation][]string{
		op.Planning: {"a", "finish:a"}, op.Inference: {"guard"}, op.Turn: nil, op.ToolCall: nil, op.Synthesis: nil,
	}
	for o, want := range calls {
		log = nil
		call := toolCall()
		call.Operation, call.Model = o, "m"
		_, finish, err := r.Start(context.Background(), call)
		if err != nil {
			t.Fatalf("Start(%s): %v", o, err)
		}
		finish(op.Result{Outcome: op.Completed})
		if !reflect.DeepEqual(log, want) {
			t.Errorf("%s ran %v, want %v", o, log, want)
		}
	}
}

func TestCompile_DefaultLoggerDiscards(t *testing.T) {
	r, err := op.Compile(op.Set{Arounds: []op.Around{{Name: "boom", Operations: []op.Operation{op.Turn},
		Begin: func(context.Context, op.Call) (context.Context, op.FinishFunc) { panic("x") }}}}, op.WithLogger(nil))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if _, _, err := r.Start(context.Background(), op.Call{Operation: op.Turn, RequestID: "r"}); err != nil {
		t.Fatalf("Start: %v", err)
	}
}
