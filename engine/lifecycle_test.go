package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// countingPlanner returns plans[i] for phase i+1.
type countingPlanner struct {
	plans []*engine.RoutingPlan
	calls atomic.Int32
}

func (p *countingPlanner) Plan(_ context.Context, _ *engine.PipelineContext, history []engine.PhaseRecord) (*engine.RoutingPlan, error) {
	p.calls.Add(1)
	if len(history) >= len(p.plans) {
		return nil, errors.New("no more plans")
	}
	return p.plans[len(history)], nil
}

type countingExecutor struct{ calls atomic.Int32 }

func (e *countingExecutor) Execute(_ context.Context, step engine.RoutingStep, _ []engine.StepResult) (any, error) {
	e.calls.Add(1)
	return map[string]any{"data": map[string]any{"price": 42.0}, "step": step.StepID}, nil
}

type countingSynthesizer struct{ calls atomic.Int32 }

func (s *countingSynthesizer) Synthesize(_ context.Context, _ *engine.PipelineContext, r *engine.ExecutionResult) (string, error) {
	s.calls.Add(1)
	return fmt.Sprintf("ran %d steps", len(r.Steps)), nil
}

// allStages takes part in every stage and counts its calls per stage.
type allStages struct {
	name   string
	calls  map[engine.Stage]*atomic.Int32
	reject func(plan *engine.RoutingPlan) error
}

func newAllStages(name string) *allStages {
	h := &allStages{name: name, calls: map[engine.Stage]*atomic.Int32{}}
	for _, s := range engine.Stages {
		h.calls[s] = new(atomic.Int32)
	}
	return h
}

func (h *allStages) Name() string { return h.name }
func (h *allStages) BeforePlanning(context.Context, *engine.PipelineContext) (*engine.ShortCircuit, error) {
	h.calls[engine.StageBeforePlanning].Add(1)
	return nil, nil
}
func (h *allStages) AfterPlanning(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
	h.calls[engine.StageAfterPlanning].Add(1)
	if h.reject != nil {
		if err := h.reject(plan); err != nil {
			return nil, err
		}
	}
	return plan, nil
}
func (h *allStages) AfterExecution(context.Context, *engine.PipelineContext, *engine.ExecutionResult) error {
	h.calls[engine.StageAfterExecution].Add(1)
	return nil
}
func (h *allStages) AfterSynthesis(_ context.Context, _ *engine.PipelineContext, r string) (string, error) {
	h.calls[engine.StageAfterSynthesis].Add(1)
	return r + " [" + h.name + "]", nil
}

// governed is a required after-planning hook rejecting execute_trade.
type governed struct{ *allStages }

func (governed) RequireAfterPlanningSuccess() {}

func newGoverned() governed {
	h := newAllStages("allowed-operations")
	h.reject = func(plan *engine.RoutingPlan) error {
		for _, s := range plan.Steps {
			if s.Capability() == "execute_trade" {
				return fmt.Errorf("step %s uses an operation not allowed by this application", s.StepID)
			}
		}
		return nil
	}
	return governed{h}
}

type shortCircuiter struct{ calls atomic.Int32 }

func (*shortCircuiter) Name() string { return "cache" }
func (s *shortCircuiter) BeforePlanningDecision(context.Context, *engine.PipelineContext, engine.Gate) (*engine.ShortCircuitDecision, error) {
	s.calls.Add(1)
	return &engine.ShortCircuitDecision{ShortCircuit: &engine.ShortCircuit{Response: "cached", Source: "cache"}, Kind: engine.KindCache}, nil
}

func catalog(t *testing.T) *engine.Catalog {
	t.Helper()
	c, err := engine.NewCatalog([]engine.CatalogAgent{{
		Namespace: "demo-tools", Agent: "stock-service",
		Capabilities: []engine.Capability{{Name: "stock_quote", Returns: []string{"price"}}, {Name: "execute_trade"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func step(id, capability string, params map[string]any, deps ...string) engine.RoutingStep {
	return engine.RoutingStep{
		StepID: id, AgentName: "stock-service", Namespace: "demo-tools", Instruction: capability,
		DependsOn: deps, Metadata: map[string]any{"capability": capability, "parameters": params},
	}
}

func plan(phase int, terminal bool, steps ...engine.RoutingStep) *engine.RoutingPlan {
	return &engine.RoutingPlan{PlanID: fmt.Sprintf("plan-%d", phase), PhaseNumber: phase, Terminal: &terminal, Steps: steps}
}

type fixture struct {
	planner *countingPlanner
	exec    *countingExecutor
	synth   *countingSynthesizer
	store   *store.Memory
	lc      *engine.Lifecycle
}

func newFixture(t *testing.T, hooks []engine.Hook, runner *op.Runner, plans ...*engine.RoutingPlan) *fixture {
	t.Helper()
	p, err := engine.New(hooks, engine.WithCatalog(catalog(t)))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{planner: &countingPlanner{plans: plans}, exec: &countingExecutor{}, synth: &countingSynthesizer{}, store: store.NewMemory(store.MemoryOptions{})}
	f.lc = &engine.Lifecycle{Driver: newDriver(t, p, runner, f.store), Planner: f.planner, Executor: f.exec, Synthesizer: f.synth}
	return f
}

func (f *fixture) stored(t *testing.T, id string) *engine.ExecutionRecord {
	t.Helper()
	rec, err := f.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestLifecycle_EveryHookRunsOnceInNormalRequest(t *testing.T) {
	a, b, req := newAllStages("a"), newAllStages("b"), newGoverned()
	f := newFixture(t, []engine.Hook{a, b, req}, nil, plan(1, true, step("step-1", "stock_quote", nil)))
	out, err := f.lc.Run(context.Background(), engine.Request{ID: "r1", Text: "price of ACME"})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*allStages{a, b, req.allStages} {
		for _, s := range engine.Stages {
			if n := h.calls[s].Load(); n != 1 {
				t.Errorf("hook %s stage %s ran %d times, want 1", h.name, s, n)
			}
		}
	}
	if out.Response.Response != "ran 1 steps [a] [b] [allowed-operations]" {
		t.Errorf("response = %q", out.Response.Response)
	}
	rec := f.stored(t, "r1")
	if rec.Status != engine.RecordSucceeded || rec.FinalResponseSource != engine.SourceAfterSynthesis || rec.Generation != "gen-test" {
		t.Errorf("record = %+v", rec)
	}
	if len(rec.PipelineHooks) != 12 || len(rec.Phases) != 1 || rec.Revision < 2 {
		t.Errorf("record has %d invocations, %d phases, revision %d", len(rec.PipelineHooks), len(rec.Phases), rec.Revision)
	}
}

func TestLifecycle_RequiredRejectionRunsNoToolNoSynthesis(t *testing.T) {
	req, after := newGoverned(), newAllStages("audit")
	after.reject = nil
	f := newFixture(t, []engine.Hook{req}, nil, plan(1, true, step("step-1", "execute_trade", map[string]any{"amount": 5})))
	_, err := f.lc.Run(context.Background(), engine.Request{ID: "r2", Text: "buy"})
	rejected, ok := engine.AsRequiredAfterPlanningError(err)
	if !ok || rejected.Hook != "allowed-operations" {
		t.Fatalf("err = %v, want RequiredAfterPlanningError from allowed-operations", err)
	}
	if n := f.exec.calls.Load(); n != 0 {
		t.Errorf("executor ran %d times after a required rejection", n)
	}
	if n := f.synth.calls.Load(); n != 0 {
		t.Errorf("synthesizer ran %d times after a required rejection", n)
	}
	if n := req.calls[engine.StageAfterExecution].Load() + req.calls[engine.StageAfterSynthesis].Load(); n != 0 {
		t.Errorf("post-execution hooks ran %d times", n)
	}
	rec := f.stored(t, "r2")
	if rec.Status != engine.RecordFailed || len(rec.Phases) != 0 || !strings.Contains(rec.Error, `required after-planning hook "allowed-operations" failed`) {
		t.Errorf("failed record = %+v", rec)
	}
	last := rec.PipelineHooks[len(rec.PipelineHooks)-1]
	if last.Status != engine.InvocationFailed || last.Decision == nil || *last.Decision != (engine.DecisionRecord{FailurePolicy: engine.FailClosed, Action: engine.ActionTerminate, Reason: engine.ReasonHookError, Cause: engine.CauseHookError}) {
		t.Errorf("required invocation = %+v", last)
	}
}

func TestLifecycle_ShortCircuitSkipsPlanner(t *testing.T) {
	sc, later := &shortCircuiter{}, newAllStages("later")
	f := newFixture(t, []engine.Hook{sc, later}, nil, plan(1, true, step("step-1", "stock_quote", nil)))
	out, err := f.lc.Run(context.Background(), engine.Request{ID: "r3", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Response.Response != "cached" || out.Response.Confidence != 1.0 {
		t.Errorf("response = %+v", out.Response)
	}
	if f.planner.calls.Load()+f.exec.calls.Load()+f.synth.calls.Load() != 0 {
		t.Errorf("planner/executor/synthesizer ran after a short circuit")
	}
	for _, s := range engine.Stages {
		if n := later.calls[s].Load(); n != 0 {
			t.Errorf("later hook ran in %s", s)
		}
	}
	if rec := f.stored(t, "r3"); rec.FinalResponseSource != engine.SourceShortCircuit || rec.Status != engine.RecordSucceeded {
		t.Errorf("record = %+v", rec)
	}
}

func TestLifecycle_PhaseTwoRejectionKeepsPhaseOne(t *testing.T) {
	f := newFixture(t, []engine.Hook{newGoverned()}, nil,
		plan(1, false, step("step-1", "stock_quote", nil)),
		plan(2, true, step("step-2", "execute_trade", nil)))
	_, err := f.lc.Run(context.Background(), engine.Request{ID: "r4", Text: "quote then trade"})
	if _, ok := engine.AsRequiredAfterPlanningError(err); !ok {
		t.Fatalf("err = %v, want a required rejection", err)
	}
	rec := f.stored(t, "r4")
	if rec.Status != engine.RecordFailed || len(rec.Phases) != 1 || rec.Phases[0].Plan.PlanID != "plan-1" {
		t.Fatalf("phase-1 plan not kept: %+v", rec.Phases)
	}
	if rec.Result == nil || len(rec.Result.Steps) != 1 || !rec.Result.Steps[0].Success || rec.Result.Steps[0].StepID != "step-1" {
		t.Fatalf("phase-1 results not kept: %+v", rec.Result)
	}
	if n := f.exec.calls.Load(); n != 1 {
		t.Errorf("executor ran %d times, want 1 (phase 1 only)", n)
	}
}

func TestLifecycle_DeniedToolCallFailsStepAndSkipsDependents(t *testing.T) {
	runner, err := op.Compile(op.Set{PolicyRevision: "trade-limits-v1", Guards: []op.Guard{{
		Name: "trade-limit", Operations: []op.Operation{op.ToolCall},
		Check: func(_ context.Context, c op.Call) error {
			if c.Capability == "execute_trade" {
				return op.Deny("trade_limit", "trades above 10000 need approval")
			}
			return nil
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, nil, runner, plan(1, true,
		step("step-1", "execute_trade", map[string]any{"amount": 20000}),
		step("step-2", "stock_quote", map[string]any{"ref": "{{step-1.response.data.price}}"}, "step-1"),
		step("step-3", "stock_quote", nil)))
	out, err := f.lc.Run(context.Background(), engine.Request{ID: "r5", Text: "trade"})
	if err != nil {
		t.Fatal(err)
	}
	steps := out.Record.Result.Steps
	if len(steps) != 3 || steps[0].Success || !strings.Contains(steps[0].Error, "trade_limit") || !strings.Contains(steps[0].Error, "trades above 10000 need approval") {
		t.Fatalf("denied step = %+v", steps)
	}
	if !steps[1].Skipped || steps[1].SkipReason != engine.SkipDependencyFailed || !steps[2].Success {
		t.Fatalf("dependent/independent steps = %+v", steps[1:])
	}
	if n := f.exec.calls.Load(); n != 1 {
		t.Errorf("executor ran %d times, want 1 (only the independent step)", n)
	}
}

func TestLifecycle_InvalidIncomingPlanFailsRequest(t *testing.T) {
	bad := plan(1, true, engine.RoutingStep{StepID: "step-1", AgentName: "ghost", Namespace: "demo-tools", Metadata: map[string]any{"capability": "x"}})
	f := newFixture(t, []engine.Hook{newAllStages("a")}, nil, bad)
	_, err := f.lc.Run(context.Background(), engine.Request{ID: "r6", Text: "x"})
	if pe, ok := engine.AsPlanError(err); !ok || pe.Rule != 2 {
		t.Fatalf("err = %v, want plan rule 2", err)
	}
	if f.exec.calls.Load() != 0 || f.stored(t, "r6").Status != engine.RecordFailed {
		t.Fatal("invalid plan ran tools or left a non-failed record")
	}
}

type panicky struct{ value any }

func (panicky) Name() string { return "panicky" }
func (p panicky) AfterSynthesis(context.Context, *engine.PipelineContext, string) (string, error) {
	panic(p.value)
}

func TestLifecycle_PanicFailsRecordAndRepanics(t *testing.T) {
	value := &struct{ msg string }{"boom"}
	f := newFixture(t, []engine.Hook{panicky{value}}, nil, plan(1, true, step("step-1", "stock_quote", nil)))
	func() {
		defer func() {
			if r := recover(); r != value {
				t.Fatalf("recovered %v, want the original panic value", r)
			}
		}()
		_, _ = f.lc.Run(context.Background(), engine.Request{ID: "r7", Text: "x"})
	}()
	rec := f.stored(t, "r7")
	if rec.Status != engine.RecordFailed || len(rec.Phases) != 1 || !strings.HasPrefix(rec.Error, "pipeline hook panic: ") {
		t.Fatalf("record after panic = %+v", rec)
	}
}

// lateAuditor announces a pending effect and completes it after the hook returned.
type lateAuditor struct{ done chan func() }

func (lateAuditor) Name() string { return "audit" }
func (a lateAuditor) AfterExecution(ctx context.Context, _ *engine.PipelineContext, _ *engine.ExecutionResult) error {
	e := engine.Effect{EffectID: "audit-write", Status: engine.EffectPending}
	if err := engine.ReportEffect(ctx, e); err != nil {
		return err
	}
	a.done <- func() {
		e.Status = engine.EffectSucceeded
		if err := engine.ReportEffect(ctx, e); err != nil {
			panic(err)
		}
	}
	return nil
}

func TestLifecycle_LateEffectRewritesRecord(t *testing.T) {
	a := lateAuditor{done: make(chan func(), 1)}
	f := newFixture(t, []engine.Hook{a}, nil, plan(1, true, step("step-1", "stock_quote", nil)))
	if _, err := f.lc.Run(context.Background(), engine.Request{ID: "r8", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	before := f.stored(t, "r8")
	(<-a.done)()
	after := f.stored(t, "r8")
	if after.Revision <= before.Revision || after.Status != engine.RecordSucceeded {
		t.Fatalf("late effect: revision %d -> %d, status %s", before.Revision, after.Revision, after.Status)
	}
	var effect engine.Effect
	for _, inv := range after.PipelineHooks {
		if inv.HookName == "audit" {
			effect = inv.Effects[0]
		}
	}
	if effect.Status != engine.EffectSucceeded {
		t.Fatalf("effect after late update = %+v", effect)
	}
}
