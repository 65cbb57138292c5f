package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

func TestNew_EmptyPipelineIsValid(t *testing.T) {
	for name, hooks := range map[string][]engine.Hook{"nil": nil, "empty": {}} {
		t.Run(name, func(t *testing.T) {
			p := mustNew(t, hooks)
			ctx := context.Background()
			trail := engine.NewTrail()
			if out, err := p.BeforePlanning(ctx, newPctx(), engine.NewGate(nil, false), trail); out != nil || err != nil {
				t.Fatalf("BeforePlanning = %v, %v; want nil, nil", out, err)
			}
			plan := threeStepPlan()
			if got, err := p.AfterPlanning(ctx, newPctx(), plan, nil, trail); got != plan || err != nil {
				t.Fatalf("AfterPlanning = %p, %v; want the input plan %p", got, err, plan)
			}
			p.AfterExecution(ctx, newPctx(), &engine.ExecutionResult{}, trail)
			if got := p.AfterSynthesis(ctx, newPctx(), "draft", trail); got != "draft" {
				t.Fatalf("AfterSynthesis = %q, want draft", got)
			}
			if n := len(trail.Invocations()); n != 0 {
				t.Fatalf("trail has %d invocations, want 0", n)
			}
		})
	}
}

func TestNew_NilHookEntryNamesIndex(t *testing.T) {
	var typedNil *planHook
	cases := map[string]struct {
		hooks []engine.Hook
		index int
	}{
		"nil interface at 0":       {[]engine.Hook{nil}, 0},
		"nil interface at 2":       {[]engine.Hook{&idleHook{"a"}, &idleHook{"b"}, nil}, 2},
		"typed nil pointer at 1":   {[]engine.Hook{&idleHook{"a"}, typedNil, &idleHook{"c"}}, 1},
		"typed nil before invalid": {[]engine.Hook{typedNil, &markerOnly{"drift"}}, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := engine.New(tc.hooks)
			if p != nil {
				t.Fatalf("New returned a pipeline with an error")
			}
			if !errors.Is(err, engine.ErrInvalidPipeline) {
				t.Fatalf("err = %v, want ErrInvalidPipeline", err)
			}
			var nilErr *engine.NilHookError
			if !errors.As(err, &nilErr) || nilErr.Index != tc.index {
				t.Fatalf("err = %#v, want *NilHookError{Index: %d}", err, tc.index)
			}
			if want := fmt.Sprintf("invalid pipeline: hook %d is nil", tc.index); err.Error() != want {
				t.Fatalf("message = %q, want %q", err.Error(), want)
			}
		})
	}
}

// requiredErr runs New and returns its *InvalidRequiredHookError, failing otherwise.
func requiredErr(t *testing.T, hooks ...engine.Hook) *engine.InvalidRequiredHookError {
	t.Helper()
	p, err := engine.New(hooks)
	if p != nil || !errors.Is(err, engine.ErrInvalidPipeline) {
		t.Fatalf("New = %v, %v; want a construction error", p, err)
	}
	var re *engine.InvalidRequiredHookError
	if !errors.As(err, &re) {
		t.Fatalf("err = %#v, want *InvalidRequiredHookError", err)
	}
	return re
}

func TestNew_RequiredStageDrift(t *testing.T) {
	re := requiredErr(t, &decisionHook{name: "cache"}, &markerOnly{name: "governed"})
	if re.Reason != engine.RequiredStageDrift || re.Hook != "governed" || re.Index != 1 {
		t.Fatalf("err = %+v, want stage_drift on governed at 1", re)
	}
}

func TestNew_MultipleRequired(t *testing.T) {
	re := requiredErr(t, &requiredHook{planHook{name: "first"}}, &idleHook{"x"}, &requiredHook{planHook{name: "second"}})
	if re.Reason != engine.RequiredMultiple || re.Hook != "second" || re.Index != 2 {
		t.Fatalf("err = %+v, want multiple_required on second at 2", re)
	}
}

func TestNew_RequiredNotTerminal(t *testing.T) {
	re := requiredErr(t, &planHook{name: "before"}, &requiredHook{planHook{name: "governed"}}, &planHook{name: "after"})
	if re.Reason != engine.RequiredNotTerminal || re.Hook != "governed" || re.Index != 1 {
		t.Fatalf("err = %+v, want required_not_terminal on governed at 1", re)
	}
}

func TestNew_OtherStagesMayFollowRequired(t *testing.T) {
	p := mustNew(t, []engine.Hook{
		&planHook{name: "optional"},
		&requiredHook{planHook{name: "governed"}},
		&decisionHook{name: "cache"},
		&legacyHook{name: "rag"},
		&executionHook{name: "audit"},
		&synthesisHook{name: "redact"},
		&idleHook{name: "idle"},
	})
	if name, ok := p.RequiredHook(); !ok || name != "governed" {
		t.Fatalf("RequiredHook = %q, %v; want governed", name, ok)
	}
	if got := stageHooks(p, engine.StageAfterPlanning); !reflect.DeepEqual(got, []string{"optional", "governed"}) {
		t.Fatalf("after_planning hooks = %v", got)
	}
}

func TestNew_CopiesCallerSlice(t *testing.T) {
	first, second := &synthesisHook{name: "first"}, &synthesisHook{name: "second"}
	hooks := []engine.Hook{first, second}
	p := mustNew(t, hooks)
	hooks[0], hooks[1] = &synthesisHook{name: "intruder"}, nil

	if got := stageHooks(p, engine.StageAfterSynthesis); !reflect.DeepEqual(got, []string{"first", "second"}) {
		t.Fatalf("stage hooks after caller mutation = %v", got)
	}
	if first.calls != 1 || second.calls != 1 {
		t.Fatalf("calls = %d, %d; want the registered hooks to run", first.calls, second.calls)
	}
}

func TestNew_HookTakesPartInEveryStageItImplements(t *testing.T) {
	multi := &multiStageHook{name: "multi"}
	p := mustNew(t, []engine.Hook{multi, &idleHook{"idle"}})
	for _, stage := range engine.Stages {
		if got := stageHooks(p, stage); !reflect.DeepEqual(got, []string{"multi"}) {
			t.Errorf("%s hooks = %v, want [multi]", stage, got)
		}
	}
	if _, ok := p.RequiredHook(); ok {
		t.Fatalf("RequiredHook reported a hook without the marker")
	}
}

// stageHooks runs stage once on p and returns the names of the hooks it invoked, in
// order.
func stageHooks(p *engine.Pipeline, stage engine.Stage) []string {
	ctx, pctx, trail := context.Background(), newPctx(), engine.NewTrail()
	switch stage {
	case engine.StageBeforePlanning:
		_, _ = p.BeforePlanning(ctx, pctx, engine.Gate{}, trail)
	case engine.StageAfterPlanning:
		_, _ = p.AfterPlanning(ctx, pctx, &engine.RoutingPlan{PlanID: "p1"}, nil, trail)
	case engine.StageAfterExecution:
		p.AfterExecution(ctx, pctx, &engine.ExecutionResult{}, trail)
	case engine.StageAfterSynthesis:
		p.AfterSynthesis(ctx, pctx, "r", trail)
	}
	var names []string
	for _, inv := range trail.Invocations() {
		names = append(names, inv.HookName)
	}
	return names
}

// multiStageHook takes part in all four stages.
type multiStageHook struct {
	name string
	log  []engine.Stage
}

func (h *multiStageHook) Name() string { return h.name }
func (h *multiStageHook) BeforePlanning(context.Context, *engine.PipelineContext) (*engine.ShortCircuit, error) {
	h.log = append(h.log, engine.StageBeforePlanning)
	return nil, nil
}
func (h *multiStageHook) AfterPlanning(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
	h.log = append(h.log, engine.StageAfterPlanning)
	return plan, nil
}
func (h *multiStageHook) AfterExecution(context.Context, *engine.PipelineContext, *engine.ExecutionResult) error {
	h.log = append(h.log, engine.StageAfterExecution)
	return nil
}
func (h *multiStageHook) AfterSynthesis(_ context.Context, _ *engine.PipelineContext, r string) (string, error) {
	h.log = append(h.log, engine.StageAfterSynthesis)
	return r, nil
}

func TestPipeline_SafeForConcurrentUse(t *testing.T) {
	p := mustNew(t, []engine.Hook{
		&statelessBefore{name: "enrich"},
		&statelessSynthesis{name: "suffix"},
	})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			trail := engine.NewTrail()
			pctx := newPctx()
			pctx.Request = fmt.Sprint(i)
			if _, err := p.BeforePlanning(context.Background(), pctx, engine.NewGate(map[string]string{"locale": "en"}, false), trail); err != nil {
				t.Errorf("BeforePlanning: %v", err)
			}
			if got := p.AfterSynthesis(context.Background(), pctx, "r", trail); got != "r!" {
				t.Errorf("AfterSynthesis = %q", got)
			}
			if n := len(trail.Invocations()); pctx.Enrichments["echo"] != fmt.Sprint(i) || n != 2 {
				t.Errorf("request %d saw enrichments %v and %d invocations", i, pctx.Enrichments, n)
			}
		})
	}
	wg.Wait()
}

// statelessBefore and statelessSynthesis hold no mutable state, so they can be shared
// across concurrent requests.
type statelessBefore struct{ name string }

func (h *statelessBefore) Name() string { return h.name }
func (h *statelessBefore) BeforePlanning(_ context.Context, pctx *engine.PipelineContext) (*engine.ShortCircuit, error) {
	pctx.Enrichments["echo"] = pctx.Request
	return nil, nil
}

type statelessSynthesis struct{ name string }

func (h *statelessSynthesis) Name() string { return h.name }
func (h *statelessSynthesis) AfterSynthesis(_ context.Context, _ *engine.PipelineContext, r string) (string, error) {
	return r + "!", nil
}

// panicCase builds a pipeline whose hook "bomb" panics with token in one stage, with
// an earlier hook "ok" and (where the stage allows) a later hook "later", and runs the
// stage.
type panicCase struct {
	stage    engine.Stage
	policy   engine.FailurePolicy
	okReason engine.Reason // reason recorded for the hook "ok" before the panic
	build    func(token *panicToken) (hooks []engine.Hook, later func() int)
	run      func(p *engine.Pipeline, trail *engine.Trail)
}

func panicCases() map[string]panicCase {
	ctx := context.Background()
	runBefore := func(p *engine.Pipeline, trail *engine.Trail) {
		_, _ = p.BeforePlanning(ctx, newPctx(), engine.NewGate(nil, false), trail)
	}
	runAfter := func(p *engine.Pipeline, trail *engine.Trail) {
		_, _ = p.AfterPlanning(ctx, newPctx(), threeStepPlan(), nil, trail)
	}
	return map[string]panicCase{
		"before_planning": {engine.StageBeforePlanning, engine.FailOpen, engine.ReasonNoDecision, func(tok *panicToken) ([]engine.Hook, func() int) {
			later := &decisionHook{name: "later"}
			return []engine.Hook{
				&legacyHook{name: "ok"},
				&decisionHook{name: "bomb", fn: func(context.Context, *engine.PipelineContext, engine.Gate) (*engine.ShortCircuitDecision, error) {
					panic(tok)
				}},
				later,
			}, func() int { return later.calls }
		}, runBefore},
		"after_planning optional": {engine.StageAfterPlanning, engine.FailOpen, engine.ReasonAccepted, func(tok *panicToken) ([]engine.Hook, func() int) {
			later := &planHook{name: "later"}
			return []engine.Hook{
				&planHook{name: "ok"},
				&planHook{name: "bomb", fn: func(context.Context, *engine.PipelineContext, *engine.RoutingPlan) (*engine.RoutingPlan, error) {
					panic(tok)
				}},
				later,
			}, func() int { return later.calls }
		}, runAfter},
		"after_planning required": {engine.StageAfterPlanning, engine.FailClosed, engine.ReasonAccepted, func(tok *panicToken) ([]engine.Hook, func() int) {
			return []engine.Hook{
				&planHook{name: "ok"},
				&requiredHook{planHook{name: "bomb", fn: func(context.Context, *engine.PipelineContext, *engine.RoutingPlan) (*engine.RoutingPlan, error) {
					panic(tok)
				}}},
			}, func() int { return 0 }
		}, runAfter},
		"after_execution": {engine.StageAfterExecution, engine.FailOpen, engine.ReasonCompleted, func(tok *panicToken) ([]engine.Hook, func() int) {
			later := &executionHook{name: "later"}
			return []engine.Hook{
				&executionHook{name: "ok"},
				&executionHook{name: "bomb", fn: func(context.Context, *engine.PipelineContext, *engine.ExecutionResult) error {
					panic(tok)
				}},
				later,
			}, func() int { return later.calls }
		}, func(p *engine.Pipeline, trail *engine.Trail) {
			p.AfterExecution(ctx, newPctx(), &engine.ExecutionResult{Success: true}, trail)
		}},
		"after_synthesis": {engine.StageAfterSynthesis, engine.FailOpen, engine.ReasonCompleted, func(tok *panicToken) ([]engine.Hook, func() int) {
			later := &synthesisHook{name: "later"}
			return []engine.Hook{
				&synthesisHook{name: "ok"},
				&synthesisHook{name: "bomb", fn: func(context.Context, *engine.PipelineContext, string) (string, error) {
					panic(tok)
				}},
				later,
			}, func() int { return later.calls }
		}, func(p *engine.Pipeline, trail *engine.Trail) {
			p.AfterSynthesis(ctx, newPctx(), "draft", trail)
		}},
	}
}

func TestPanic_RecordedAndRepropagatedWithOriginalValue(t *testing.T) {
	for name, tc := range panicCases() {
		t.Run(name, func(t *testing.T) {
			token := &panicToken{label: "boom in " + name}
			hooks, laterCalls := tc.build(token)
			p := mustNew(t, hooks)
			trail := engine.NewTrail()

			got := catchPanic(func() { tc.run(p, trail) })
			if tok, ok := got.(*panicToken); !ok || tok != token {
				t.Fatalf("recovered %#v, want the original *panicToken %p", got, token)
			}
			if n := laterCalls(); n != 0 {
				t.Fatalf("a later hook ran %d times after the panic", n)
			}
			invs := trail.Invocations()
			if len(invs) != 2 {
				t.Fatalf("recorded %v, want [ok bomb]", hookNames(invs))
			}
			checkInvocation(t, invs[0], "ok", tc.stage, 1, engine.InvocationSucceeded,
				decision(engine.FailOpen, engine.ActionContinue, tc.okReason), "")
			checkInvocation(t, invs[1], "bomb", tc.stage, 2, engine.InvocationFailed,
				decision(tc.policy, engine.ActionPropagatePanic, engine.ReasonPanic),
				"pipeline hook panic: boom in "+name)
		})
	}
}

func TestPanic_NonErrorValueTextAndRecordingOff(t *testing.T) {
	p := mustNew(t, []engine.Hook{&synthesisHook{name: "bomb", fn: func(context.Context, *engine.PipelineContext, string) (string, error) {
		panic(42)
	}}})
	trail := engine.NewTrail()
	if got := catchPanic(func() { p.AfterSynthesis(context.Background(), newPctx(), "r", trail) }); got != 42 {
		t.Fatalf("recovered %#v, want 42", got)
	}
	if got := trail.Invocations()[0].Error; got != "pipeline hook panic: 42" {
		t.Fatalf("error = %q", got)
	}
	if got := catchPanic(func() { p.AfterSynthesis(context.Background(), newPctx(), "r", nil) }); got != 42 {
		t.Fatalf("recording off: recovered %#v, want 42", got)
	}
}

func TestSkipped_RecordedInEveryStageAndChangesNothing(t *testing.T) {
	skip := fmt.Errorf("condition false: %w", engine.ErrSkipped)
	ctx := context.Background()
	logs := &logRecorder{}
	p := mustNew(t, []engine.Hook{
		&legacyHook{name: "before", fn: func(_ context.Context, pctx *engine.PipelineContext) (*engine.ShortCircuit, error) {
			pctx.Enrichments["touched"] = true
			return &engine.ShortCircuit{Response: "ignored"}, skip
		}},
		&planHook{name: "after", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
			plan.Steps[0].Instruction = "ignored"
			return plan, skip
		}},
		&executionHook{name: "exec", fn: func(context.Context, *engine.PipelineContext, *engine.ExecutionResult) error { return skip }},
		&synthesisHook{name: "synth", fn: func(context.Context, *engine.PipelineContext, string) (string, error) { return "ignored", skip }},
	}, engine.WithLogger(slog.New(logs)))
	trail := engine.NewTrail()
	if out, err := p.BeforePlanning(ctx, newPctx(), engine.NewGate(nil, false), trail); out != nil || err != nil {
		t.Fatalf("BeforePlanning = %v, %v", out, err)
	}
	plan := threeStepPlan()
	if got, err := p.AfterPlanning(ctx, newPctx(), plan, nil, trail); got != plan || err != nil {
		t.Fatalf("AfterPlanning = %p, %v; want the same plan", got, err)
	}
	p.AfterExecution(ctx, newPctx(), &engine.ExecutionResult{}, trail)
	if got := p.AfterSynthesis(ctx, newPctx(), "draft", trail); got != "draft" {
		t.Fatalf("AfterSynthesis = %q", got)
	}
	skipped := decision(engine.FailOpen, engine.ActionContinue, engine.ReasonSkipped)
	invs := trail.Invocations()
	for i, stage := range engine.Stages {
		checkInvocation(t, invs[i], invs[i].HookName, stage, 1, engine.InvocationSkipped, skipped, "")
	}
	if n := len(invs[0].Effects); n != 1 {
		t.Fatalf("enrichment changes of a skipping hook: %d effects, want 1", n)
	}
	if got := logs.warnings(); len(got) != 0 {
		t.Fatalf("a skip is not a failure, but warned for %v", got)
	}
}
