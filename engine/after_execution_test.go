package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

func TestAfterExecution_EveryHookRunsWithCombinedResult(t *testing.T) {
	result := &engine.ExecutionResult{PlanID: "plan-2", Success: true, PhaseCount: 2,
		Steps: []engine.StepResult{{StepID: "step-1", Success: true}, {StepID: "step-4", Success: true}}}
	a, b := &executionHook{name: "a"}, &executionHook{name: "b"}
	p := mustNew(t, []engine.Hook{a, &synthesisHook{name: "other-stage"}, b})
	trail := engine.NewTrail()
	p.AfterExecution(context.Background(), newPctx(), result, trail)
	if a.calls != 1 || b.calls != 1 || a.seen[0] != result || b.seen[0] != result {
		t.Fatalf("hooks did not each see the combined result once")
	}
	invs := trail.Invocations()
	if got := hookNames(invs); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("recorded %v", got)
	}
	for i, inv := range invs {
		checkInvocation(t, inv, inv.HookName, engine.StageAfterExecution, i+1, engine.InvocationSucceeded,
			decision(engine.FailOpen, engine.ActionContinue, engine.ReasonCompleted), "")
	}
}

func TestAfterExecution_ObserveOnlyErrorsFailOpen(t *testing.T) {
	logs := &logRecorder{}
	boom := errors.New("analytics sink down")
	failing := &executionHook{name: "failing", fn: func(context.Context, *engine.PipelineContext, *engine.ExecutionResult) error {
		return boom
	}}
	after := &executionHook{name: "after"}
	p := mustNew(t, []engine.Hook{failing, after}, engine.WithLogger(slog.New(logs)))
	trail := engine.NewTrail()
	result := &engine.ExecutionResult{PlanID: "p", Success: true}
	p.AfterExecution(context.Background(), newPctx(), result, trail)
	if after.calls != 1 {
		t.Fatalf("the hook after an error ran %d times, want 1", after.calls)
	}
	if !reflect.DeepEqual(result, &engine.ExecutionResult{PlanID: "p", Success: true}) {
		t.Fatalf("result changed: %+v", result)
	}
	invs := trail.Invocations()
	checkInvocation(t, invs[0], "failing", engine.StageAfterExecution, 1, engine.InvocationFailed,
		decision(engine.FailOpen, engine.ActionContinue, engine.ReasonHookError), "analytics sink down")
	checkInvocation(t, invs[1], "after", engine.StageAfterExecution, 2, engine.InvocationSucceeded,
		decision(engine.FailOpen, engine.ActionContinue, engine.ReasonCompleted), "")
	if got := logs.warnings(); !reflect.DeepEqual(got, []string{"failing"}) {
		t.Fatalf("warnings = %v", got)
	}
}
