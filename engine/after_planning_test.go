package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

// rewrite returns an optional hook that applies fn to its copy and returns it.
func rewrite(name string, fn func(p *engine.RoutingPlan)) *planHook {
	return &planHook{name: name, fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		fn(plan)
		return plan, nil
	}}
}

// failWith returns an optional hook that returns (plan, err).
func failWith(name string, plan *engine.RoutingPlan, err error) *planHook {
	return &planHook{name: name, fn: func(context.Context, *engine.PipelineContext, *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		return plan, err
	}}
}

// runAfter runs after_planning over plan with the test catalog and a fresh trail.
func runAfter(t *testing.T, hooks []engine.Hook, plan *engine.RoutingPlan, opts ...engine.Option) (*engine.RoutingPlan, []engine.Invocation, error) {
	t.Helper()
	p := mustNew(t, hooks, append([]engine.Option{engine.WithCatalog(testCatalog(t))}, opts...)...)
	trail := engine.NewTrail()
	got, err := p.AfterPlanning(context.Background(), newPctx(), plan, nil, trail)
	return got, trail.Invocations(), err
}

// unclonablePlan is valid except that a parameter value cannot be deep-copied.
func unclonablePlan() *engine.RoutingPlan {
	plan := threeStepPlan()
	plan.Steps[0].Parameters()["callback"] = make(chan int)
	return plan
}

const unclonableText = "cannot copy plan: value at steps[0].metadata.parameters.callback has unsupported type chan int"

func TestAfterPlanning_EachHookGetsDeepCopy(t *testing.T) {
	original := threeStepPlan()
	original.Terminal = new(bool)
	original.NeedsUserInput = &engine.NeedsUserInput{Question: "which city?", MissingFields: []string{"city"}}
	pristine := mustClone(t, original)

	vandalize := func(plan *engine.RoutingPlan) {
		*plan.Terminal = true
		plan.NeedsUserInput.MissingFields[0] = "changed"
		s := &plan.Steps[0]
		s.Parameters()["city"] = "Paris"
		plan.Steps[1].Parameters()["region"].([]any)[0] = "south"
		plan.Steps[2].DependsOn[0] = "step-9"
		s.Metadata["capability"] = "alerts"
		plan.Steps = append(plan.Steps[:1], plan.Steps[2:]...)
	}
	first := &planHook{name: "vandal", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		vandalize(plan)
		return nil, errors.New("gave up")
	}}
	second := &planHook{name: "vandal-2", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		if !reflect.DeepEqual(plan, pristine) {
			t.Errorf("second hook got a plan changed by the first hook's copy")
		}
		vandalize(plan)
		return plan, nil // invalid after the vandalism: rejected
	}}
	got, invs, err := runAfter(t, []engine.Hook{first, second}, original)
	if err != nil || got != original {
		t.Fatalf("AfterPlanning = %p, %v; want the original plan %p", got, err, original)
	}
	if first.seen[0] == original || second.seen[0] == original || first.seen[0] == second.seen[0] {
		t.Fatalf("hooks received the original or a shared plan pointer")
	}
	if !reflect.DeepEqual(original, pristine) {
		t.Fatalf("the original plan was mutated:\n got %+v\nwant %+v", original, pristine)
	}
	if invs[1].Decision.Reason != engine.ReasonInvalidPlan {
		t.Fatalf("second hook decision = %+v, want invalid_plan", invs[1].Decision)
	}
}

func TestAfterPlanning_OptionalCloneFailedSkipped(t *testing.T) {
	plan := unclonablePlan()
	hook := &planHook{name: "never-called"}
	logs := &logRecorder{}
	got, invs, err := runAfter(t, []engine.Hook{hook}, plan, engine.WithLogger(slog.New(logs)))
	if err != nil || got != plan {
		t.Fatalf("AfterPlanning = %p, %v; want the same plan %p", got, err, plan)
	}
	if hook.calls != 0 {
		t.Fatalf("hook was called %d times with an uncopyable plan", hook.calls)
	}
	checkInvocation(t, invs[0], "never-called", engine.StageAfterPlanning, 1, engine.InvocationSkipped,
		decision(engine.FailOpen, engine.ActionContinue, engine.ReasonCloneFailed), unclonableText)
	if got := logs.warnings(); !reflect.DeepEqual(got, []string{"never-called"}) {
		t.Fatalf("warnings = %v", got)
	}
}

func TestAfterPlanning_OptionalErrorKeepsPreviousPlan(t *testing.T) {
	var accepted *engine.RoutingPlan
	first := &planHook{name: "rename", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		plan.Steps[0].Instruction = "renamed"
		accepted = plan
		return plan, nil
	}}
	broken := &planHook{name: "broken", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		plan.Steps[0].Instruction = "lost"
		return plan, errors.New("policy service timeout")
	}}
	var lastSaw string
	last := &planHook{name: "last", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		lastSaw = plan.Steps[0].Instruction
		return plan, errors.New("also failing")
	}}
	got, invs, err := runAfter(t, []engine.Hook{first, broken, last}, threeStepPlan())
	if err != nil || got != accepted {
		t.Fatalf("AfterPlanning = %p, %v; want the plan accepted before the errors (%p)", got, err, accepted)
	}
	if last.calls != 1 || lastSaw != "renamed" {
		t.Fatalf("next hook ran %d times on %q; want once on the previous plan", last.calls, lastSaw)
	}
	if got.Steps[0].Instruction != "renamed" {
		t.Fatalf("a failing hook's mutation leaked into the kept plan: %q", got.Steps[0].Instruction)
	}
	checkInvocation(t, invs[1], "broken", engine.StageAfterPlanning, 2, engine.InvocationFailed,
		decision(engine.FailOpen, engine.ActionContinue, engine.ReasonHookError), "policy service timeout")
}

func TestAfterPlanning_OptionalNilIsInvalidType(t *testing.T) {
	plan := threeStepPlan()
	got, invs, err := runAfter(t, []engine.Hook{failWith("nil-plan", nil, nil)}, plan)
	if err != nil || got != plan {
		t.Fatalf("AfterPlanning = %p, %v; want the same plan %p", got, err, plan)
	}
	checkInvocation(t, invs[0], "nil-plan", engine.StageAfterPlanning, 1, engine.InvocationFailed,
		decision(engine.FailOpen, engine.ActionContinue, engine.ReasonInvalidType), engine.ErrNoPlan.Error())
}

func TestAfterPlanning_OptionalInvalidPlanKeepsPrevious(t *testing.T) {
	cases := map[engine.PlanCode]func(p *engine.RoutingPlan){
		engine.PlanCodeEmptyPlan:                 func(p *engine.RoutingPlan) { p.Steps, p.Terminal = nil, new(bool) },
		engine.PlanCodeUnknownAgent:              func(p *engine.RoutingPlan) { p.Steps[0].AgentName = "bank" },
		engine.PlanCodeUnknownCapability:         func(p *engine.RoutingPlan) { p.Steps[0].Metadata["capability"] = "transfer" },
		engine.PlanCodeUnknownDependency:         func(p *engine.RoutingPlan) { p.Steps[1].DependsOn = []string{"step-7"} },
		engine.PlanCodeDependencyCycle:           func(p *engine.RoutingPlan) { p.Steps[0].DependsOn = []string{"step-3"} },
		engine.PlanCodeMalformedReference:        func(p *engine.RoutingPlan) { p.Steps[2].Parameters()["text"] = "{{step-1}}" },
		engine.PlanCodeUndeclaredDependency:      func(p *engine.RoutingPlan) { p.Steps[2].DependsOn = []string{"step-2"} },
		engine.PlanCodeUnknownReturnField:        func(p *engine.RoutingPlan) { p.Steps[2].Parameters()["text"] = "{{step-1.response.data.rain}}" },
		engine.PlanCodeInvalidImplicitDependency: func(p *engine.RoutingPlan) { p.Steps[1].ImplicitDeps = []string{"step-1"} },
	}
	for code, mutate := range cases {
		t.Run(string(code), func(t *testing.T) {
			var candidate *engine.RoutingPlan
			hook := &planHook{name: "mutator", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
				mutate(plan)
				candidate = plan
				return plan, nil
			}}
			plan := threeStepPlan()
			got, invs, err := runAfter(t, []engine.Hook{hook}, plan)
			if err != nil || got != plan {
				t.Fatalf("AfterPlanning = %p, %v; want the same plan %p", got, err, plan)
			}
			verr := engine.ValidatePlan(candidate, testCatalog(t), nil)
			if pe, ok := engine.AsPlanError(verr); !ok || pe.Code != code {
				t.Fatalf("candidate validation = %v, want code %s", verr, code)
			}
			checkInvocation(t, invs[0], "mutator", engine.StageAfterPlanning, 1, engine.InvocationFailed,
				decision(engine.FailOpen, engine.ActionContinue, engine.ReasonInvalidPlan), verr.Error())
		})
	}
}

func TestAfterPlanning_Chaining(t *testing.T) {
	var inputs []string
	appendTo := func(name, suffix string) *planHook {
		return rewrite(name, func(p *engine.RoutingPlan) {
			inputs = append(inputs, p.Steps[0].Instruction)
			p.Steps[0].Instruction += suffix
		})
	}
	a, b, c := appendTo("a", "+a"), appendTo("b", "+b"), appendTo("c", "+c")
	got, invs, err := runAfter(t, []engine.Hook{a, b, &requiredHook{*c}}, threeStepPlan())
	if err != nil {
		t.Fatal(err)
	}
	if got.Steps[0].Instruction != "forecast+a+b+c" {
		t.Fatalf("instruction = %q, want forecast+a+b+c", got.Steps[0].Instruction)
	}
	if want := []string{"forecast", "forecast+a", "forecast+a+b"}; !reflect.DeepEqual(inputs, want) {
		t.Fatalf("hook inputs = %v, want %v", inputs, want)
	}
	for i, name := range []string{"a", "b"} {
		checkInvocation(t, invs[i], name, engine.StageAfterPlanning, i+1, engine.InvocationSucceeded,
			decision(engine.FailOpen, engine.ActionContinue, engine.ReasonAccepted), "")
	}
}

func TestAfterPlanning_RequiredRejectionFailsClosed(t *testing.T) {
	hookErr := errors.New("plan touches a forbidden account")
	cases := map[engine.Reason]struct {
		plan  *engine.RoutingPlan
		hook  *requiredHook
		cause func(t *testing.T, err error)
		text  string
	}{
		engine.ReasonHookError: {
			threeStepPlan(), &requiredHook{*failWith("governed", threeStepPlan(), hookErr)},
			func(t *testing.T, err error) {
				if !errors.Is(err, hookErr) {
					t.Errorf("errors.Is(err, hook error) = false")
				}
			}, hookErr.Error(),
		},
		engine.ReasonInvalidType: {
			threeStepPlan(), &requiredHook{*failWith("governed", nil, nil)},
			func(t *testing.T, err error) {
				if !errors.Is(err, engine.ErrNoPlan) {
					t.Errorf("errors.Is(err, ErrNoPlan) = false")
				}
			}, engine.ErrNoPlan.Error(),
		},
		engine.ReasonInvalidPlan: {
			threeStepPlan(), &requiredHook{*rewrite("governed", func(p *engine.RoutingPlan) { p.Steps[0].AgentName = "bank" })},
			func(t *testing.T, err error) {
				if pe, ok := engine.AsPlanError(err); !ok || !errors.Is(err, engine.ErrInvalidPlan) || pe.Code != engine.PlanCodeUnknownAgent {
					t.Errorf("cause = %v, want a *PlanError unknown_agent", err)
				}
			}, "",
		},
		engine.ReasonCloneFailed: {
			unclonablePlan(), &requiredHook{planHook{name: "governed"}},
			func(t *testing.T, err error) {
				var ce *engine.CloneError
				if !errors.As(err, &ce) {
					t.Errorf("cause = %v, want a *CloneError", err)
				}
			}, unclonableText,
		},
	}
	for reason, tc := range cases {
		t.Run(string(reason), func(t *testing.T) {
			got, invs, err := runAfter(t, []engine.Hook{&planHook{name: "optional"}, tc.hook}, tc.plan)
			if got != nil {
				t.Fatalf("a rejected required hook returned a plan")
			}
			re, ok := engine.AsRequiredAfterPlanningError(err)
			if !ok || re.Hook != "governed" || re.Reason != reason || re.Cause == nil {
				t.Fatalf("err = %#v, want *RequiredAfterPlanningError{governed, %s}", err, reason)
			}
			var viaAs *engine.RequiredAfterPlanningError
			if !errors.As(err, &viaAs) || viaAs != re {
				t.Fatalf("errors.As does not find the error")
			}
			tc.cause(t, err)
			causeText := tc.text
			if causeText == "" {
				causeText = re.Cause.Error()
			}
			if want := fmt.Sprintf("required after-planning hook %q failed: %s", "governed", causeText); err.Error() != want {
				t.Fatalf("message = %q, want %q", err.Error(), want)
			}
			if reason == engine.ReasonCloneFailed && tc.hook.calls != 0 {
				t.Fatalf("hook called with an uncopyable plan")
			}
			status := engine.InvocationFailed
			if reason == engine.ReasonCloneFailed {
				status = engine.InvocationSkipped // the hook was never called
			}
			checkInvocation(t, invs[1], "governed", engine.StageAfterPlanning, 2, status,
				decision(engine.FailClosed, engine.ActionTerminate, reason), causeText)
		})
	}
}

func TestAfterPlanning_RequiredTimeoutFailsClosed(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	hook := &requiredHook{planHook{name: "governed", fn: func(ctx context.Context, _ *engine.PipelineContext, _ *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}}
	p := mustNew(t, []engine.Hook{hook})
	trail := engine.NewTrail()
	got, err := p.AfterPlanning(ctx, newPctx(), threeStepPlan(), nil, trail)
	if got != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AfterPlanning = %v, %v; want no plan and a deadline error", got, err)
	}
	if re, ok := engine.AsRequiredAfterPlanningError(err); !ok || re.Reason != engine.ReasonHookError {
		t.Fatalf("err = %#v", err)
	}
	want := decision(engine.FailClosed, engine.ActionTerminate, engine.ReasonHookError)
	want.Cause = engine.CauseTimeout
	if d := trail.Invocations()[0].Decision; *d != want {
		t.Fatalf("decision = %+v", *d)
	}
}

func TestAfterPlanning_RequiredCannotSkip(t *testing.T) {
	got, invs, err := runAfter(t, []engine.Hook{&requiredHook{*failWith("governed", threeStepPlan(), engine.ErrSkipped)}}, threeStepPlan())
	if re, ok := engine.AsRequiredAfterPlanningError(err); got != nil || !ok || re.Reason != engine.ReasonHookError || !errors.Is(err, engine.ErrSkipped) {
		t.Fatalf("AfterPlanning = %v, %v; want a hook_error rejection", got, err)
	}
	checkInvocation(t, invs[0], "governed", engine.StageAfterPlanning, 1, engine.InvocationFailed,
		decision(engine.FailClosed, engine.ActionTerminate, engine.ReasonHookError), engine.ErrSkipped.Error())
}

func TestAfterPlanning_RequiredAcceptedDecision(t *testing.T) {
	var returned *engine.RoutingPlan
	hook := &requiredHook{planHook{name: "governed", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		plan.Steps[0].Parameters()["city"] = "Bergen"
		returned = plan
		return plan, nil
	}}}
	got, invs, err := runAfter(t, []engine.Hook{hook}, threeStepPlan())
	if err != nil || got != returned {
		t.Fatalf("AfterPlanning = %p, %v; want the hook's plan %p", got, err, returned)
	}
	checkInvocation(t, invs[0], "governed", engine.StageAfterPlanning, 1, engine.InvocationSucceeded,
		decision(engine.FailClosed, engine.ActionContinue, engine.ReasonAccepted), "")
}

// phaseTwoPlan continues threeStepPlan: step-4 reads step-1's temperature from phase 1.
func phaseTwoPlan() *engine.RoutingPlan {
	return &engine.RoutingPlan{
		PlanID: "plan-2", OriginalRequest: "what is the weather?", PhaseNumber: 2,
		Steps: []engine.RoutingStep{{
			StepID: "step-4", AgentName: "notify", Namespace: "tools", Instruction: "send",
			ImplicitDeps: []string{"step-1"},
			Metadata: map[string]any{"capability": "send", "parameters": map[string]any{
				"text": "Still {{step-1.response.data.temp}}",
			}},
		}},
	}
}

func TestAfterPlanning_SequenceRestartsEachPhase(t *testing.T) {
	p := mustNew(t, []engine.Hook{
		&planHook{name: "a"}, &synthesisHook{name: "other-stage"}, &planHook{name: "b"}, &requiredHook{planHook{name: "governed"}},
	}, engine.WithCatalog(testCatalog(t)))
	trail := engine.NewTrail()
	ctx := context.Background()
	phase1 := threeStepPlan()
	phase1.PhaseNumber = 0 // unset counts as phase 1
	if _, err := p.AfterPlanning(ctx, newPctx(), phase1, nil, trail); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AfterPlanning(ctx, newPctx(), phaseTwoPlan(), phase1.Steps, trail); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, inv := range trail.Invocations() {
		got = append(got, fmt.Sprintf("%s:%d:%d", inv.HookName, inv.PlanPhase, inv.Sequence))
	}
	want := []string{"a:1:1", "b:1:2", "governed:1:3", "a:2:1", "b:2:2", "governed:2:3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hook:plan_phase:sequence = %v, want %v", got, want)
	}
}

func TestAfterPlanning_PriorPhasesFeedValidation(t *testing.T) {
	p := mustNew(t, []engine.Hook{&planHook{name: "keep"}}, engine.WithCatalog(testCatalog(t)))
	trail := engine.NewTrail()
	// Without the prior steps the reference to step-1 has no target: the pass-through
	// hook's result is rejected and the (invalid) input kept.
	plan := phaseTwoPlan()
	if got, err := p.AfterPlanning(context.Background(), newPctx(), plan, nil, trail); err != nil || got != plan {
		t.Fatalf("AfterPlanning = %v, %v", got, err)
	}
	if r := trail.Invocations()[0].Decision.Reason; r != engine.ReasonInvalidPlan {
		t.Fatalf("without prior: reason %q, want invalid_plan", r)
	}
	if _, err := p.AfterPlanning(context.Background(), newPctx(), plan, threeStepPlan().Steps, trail); err != nil {
		t.Fatal(err)
	}
	if r := trail.Invocations()[1].Decision.Reason; r != engine.ReasonAccepted {
		t.Fatalf("with prior: reason %q, want accepted", r)
	}
}

func TestAfterPlanning_NilPlanIsInvalid(t *testing.T) {
	p := mustNew(t, []engine.Hook{&planHook{name: "h"}})
	if got, err := p.AfterPlanning(context.Background(), newPctx(), nil, nil, nil); got != nil || !errors.Is(err, engine.ErrInvalidPlan) {
		t.Fatalf("AfterPlanning(nil) = %v, %v", got, err)
	}
}

func TestAfterPlanning_RunsOncePerPhaseBeforeExecution(t *testing.T) {
	log, store := &eventLog{}, &putLog{}
	var seen []*engine.RoutingPlan
	hook := &planHook{name: "review", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		log.add("after_planning %d", plan.PhaseNumber)
		seen = append(seen, plan)
		for _, rev := range store.all() {
			if len(rev.Phases) >= plan.PhaseNumber {
				t.Errorf("phase %d was persisted before its after_planning hook ran", plan.PhaseNumber)
			}
		}
		return plan, nil
	}}
	phase1 := threeStepPlan()
	phase1.Terminal = new(bool)
	l := recordingLifecycle(t, mustNew(t, []engine.Hook{hook}, engine.WithCatalog(testCatalog(t))), store, log, phase1, phaseTwoPlan())
	if _, err := l.Run(context.Background(), engine.Request{ID: "r", Text: "q"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"plan 1", "after_planning 1", "execute step-1", "execute step-2", "execute step-3",
		"plan 2", "after_planning 2", "execute step-4", "synthesize",
	}
	if got := log.list(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if seen[0].PlanID != "plan-1" || seen[1].PlanID != "plan-2" {
		t.Fatalf("hook saw plans %q, %q", seen[0].PlanID, seen[1].PlanID)
	}
}

// governedRun is a two-phase request whose required hook rejected one phase.
type governedRun struct {
	out   *engine.Outcome
	err   error
	log   *eventLog
	store *putLog
	exec  *executionHook
	synth *synthesisHook
}

// runGoverned runs a two-phase request whose required hook rejects phase reject.
func runGoverned(t *testing.T, reject int) governedRun {
	t.Helper()
	r := governedRun{log: &eventLog{}, store: &putLog{}, exec: &executionHook{name: "audit"}, synth: &synthesisHook{name: "redact"}}
	governed := &requiredHook{planHook{name: "governed", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		if plan.PhaseNumber == reject {
			return nil, errors.New("phase not allowed")
		}
		return plan, nil
	}}}
	phase1 := threeStepPlan()
	phase1.Terminal = new(bool)
	p := mustNew(t, []engine.Hook{governed, r.exec, r.synth}, engine.WithCatalog(testCatalog(t)))
	l := recordingLifecycle(t, p, r.store, r.log, phase1, phaseTwoPlan())
	r.out, r.err = l.Run(context.Background(), engine.Request{ID: "r", Text: "q"})
	return r
}

func TestAfterPlanning_RequiredRejectionRunsNoTool(t *testing.T) {
	r := runGoverned(t, 1)
	if _, ok := engine.AsRequiredAfterPlanningError(r.err); !ok {
		t.Fatalf("Run err = %v, want *RequiredAfterPlanningError", r.err)
	}
	if got := r.log.list(); !reflect.DeepEqual(got, []string{"plan 1"}) {
		t.Fatalf("events = %v; nothing may run after the rejection", got)
	}
	if r.exec.calls+r.synth.calls != 0 {
		t.Fatalf("later stage hooks ran")
	}
	revs := r.store.all()
	if len(revs) == 0 {
		t.Fatalf("nothing was saved")
	}
	for _, rev := range revs {
		if len(rev.Phases) != 0 || rev.Result != nil {
			t.Fatalf("revision %d persisted an accepted phase or result", rev.Revision)
		}
	}
	rec := r.out.Record
	if rec.Status != engine.RecordFailed || rec.Error != r.err.Error() || len(rec.PipelineHooks) != 1 {
		t.Fatalf("record = status %q, error %q, %d invocations", rec.Status, rec.Error, len(rec.PipelineHooks))
	}
}

func TestAfterPlanning_LaterPhaseRejectionKeepsEarlierPhases(t *testing.T) {
	r := runGoverned(t, 2)
	if re, ok := engine.AsRequiredAfterPlanningError(r.err); !ok || !strings.Contains(re.Error(), "phase not allowed") {
		t.Fatalf("Run err = %v", r.err)
	}
	want := []string{"plan 1", "execute step-1", "execute step-2", "execute step-3", "plan 2"}
	if got := r.log.list(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if r.exec.calls+r.synth.calls != 0 {
		t.Fatalf("later stage hooks ran")
	}
	revs := r.store.all()
	for _, rec := range []*engine.ExecutionRecord{r.out.Record, revs[len(revs)-1]} {
		if rec.Status != engine.RecordFailed || len(rec.Phases) != 1 || rec.Phases[0].Plan.PlanID != "plan-1" {
			t.Fatalf("record = status %q with %d phases; want failed with phase 1 only", rec.Status, len(rec.Phases))
		}
		if rec.Result == nil || len(rec.Result.Steps) != 3 || len(rec.Phases[0].Results) != 3 {
			t.Fatalf("phase 1 results lost: %+v", rec.Result)
		}
		last := rec.PipelineHooks[len(rec.PipelineHooks)-1]
		if last.PlanPhase != 2 || *last.Decision != decision(engine.FailClosed, engine.ActionTerminate, engine.ReasonHookError) {
			t.Fatalf("last invocation = %+v", last)
		}
	}
}

// readerHook is a required PlanReader: it declares it never mutates its input.
type readerHook struct{ requiredHook }

func (readerHook) ReadsPlanOnly() bool { return true }

func TestAfterPlanning_PlanReaderGetsThePlanWithoutCopy(t *testing.T) {
	plan := unclonablePlan() // a copy would fail: a PlanReader must not need one
	reader := &readerHook{requiredHook{planHook{name: "governed"}}}
	got, invs, err := runAfter(t, []engine.Hook{reader}, plan)
	if err != nil || got != plan || reader.seen[0] != plan {
		t.Fatalf("PlanReader: got %p (err %v), hook saw %p, want the caller's plan %p", got, err, reader.seen[0], plan)
	}
	if d := invs[0].Decision; invs[0].Status != engine.InvocationSucceeded || *d != decision(engine.FailClosed, engine.ActionContinue, engine.ReasonAccepted) {
		t.Fatalf("invocation = %+v", invs[0])
	}
}

func TestAfterPlanning_PlanReaderNewPlanIsStillValidated(t *testing.T) {
	reader := &readerHook{requiredHook{planHook{name: "governed", fn: func(_ context.Context, _ *engine.PipelineContext, p *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		next, _ := engine.ClonePlan(p)
		next.Steps[0].AgentName = "bank"
		return next, nil
	}}}}
	_, _, err := runAfter(t, []engine.Hook{reader}, threeStepPlan())
	if re, ok := engine.AsRequiredAfterPlanningError(err); !ok || re.Reason != engine.ReasonInvalidPlan {
		t.Fatalf("err = %v, want an invalid_plan rejection", err)
	}
}
