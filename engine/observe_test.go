package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// reportLog is an observer that keeps every report.
type reportLog struct {
	mu      sync.Mutex
	name    string
	order   *[]string
	stages  []*engine.StageReport
	checks  []*engine.CheckReport
	refused []engine.Stage
}

func (l *reportLog) note(what string) {
	if l.order != nil {
		*l.order = append(*l.order, l.name+" "+what)
	}
}

func (l *reportLog) Staged(_ context.Context, r *engine.StageReport) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.note("staged")
	l.stages = append(l.stages, r)
}

func (l *reportLog) Checked(_ context.Context, r *engine.CheckReport) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.note("checked")
	l.checks = append(l.checks, r)
}

func (l *reportLog) Refused(_ context.Context, stage engine.Stage, _ string, _ *engine.RefusalError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.note("refused")
	l.refused = append(l.refused, stage)
}

func TestObservers_TellEachInOrderAndSkipNil(t *testing.T) {
	var order []string
	a, b := &reportLog{name: "a", order: &order}, &reportLog{name: "b", order: &order}
	obs := engine.Observers(nil, a, nil, b)
	ctx := context.Background()
	obs.Staged(ctx, &engine.StageReport{})
	obs.Checked(ctx, &engine.CheckReport{})
	obs.Refused(ctx, engine.StageAfterPlanning, "r", nil)
	want := "[a staged b staged a checked b checked a refused b refused]"
	if got := fmtList(order); got != want {
		t.Fatalf("order = %s, want %s", got, want)
	}
	if engine.Observers(nil, a) != engine.Observer(a) {
		t.Fatal("one observer is not returned as itself")
	}
	engine.Observers().Staged(ctx, &engine.StageReport{}) // none: a no-op
}

func fmtList(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}

// The reports carry what an observer needs to evaluate the call again: the
// enrichments the call began with (before_planning's seeds, not what it wrote), the
// steps accepted before the call, the state a check was bound against, as it was
// before the check claimed the step, and the draft after_synthesis rewrote.
func TestDriver_ReportsCarryTheCallsStartingPoint(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory(store.MemoryOptions{})
	enrich := &legacyHook{name: "enrich", fn: func(_ context.Context, pctx *engine.PipelineContext) (*engine.ShortCircuit, error) {
		pctx.Enrichments["added"] = "by the hook"
		return nil, nil
	}}
	shout := &synthesisHook{name: "shout", fn: func(_ context.Context, _ *engine.PipelineContext, r string) (string, error) {
		return strings.ToUpper(r), nil
	}}
	p := mustNew(t, []engine.Hook{enrich, &planHook{name: "review"}, shout}, engine.WithCatalog(testCatalog(t)))
	obs := &reportLog{}
	d, err := engine.NewDriver(engine.DriverConfig{
		Generations: engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: p}},
		States:      mem, Records: mem, Observer: obs,
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Open(ctx, "r", engine.Opening{Text: "hi", Enrichments: map[string]any{"seed": "given"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeforePlanning(ctx); err != nil {
		t.Fatal(err)
	}
	first := &engine.RoutingPlan{PlanID: "p1", Steps: []engine.RoutingStep{{StepID: "step-1", Namespace: "tools", AgentName: "notify",
		Instruction: "send", Metadata: map[string]any{"capability": "send"}}}}
	if _, err := s.AfterPlanning(ctx, first, 0); err != nil {
		t.Fatal(err)
	}
	second := &engine.RoutingPlan{PlanID: "p2", Steps: []engine.RoutingStep{{StepID: "step-2", Namespace: "tools", AgentName: "notify",
		Instruction: "send", Metadata: map[string]any{"capability": "send"}}}}
	if _, err := s.AfterPlanning(ctx, second, 0); err != nil {
		t.Fatal(err)
	}
	call := op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-1", Namespace: "tools", AgentName: "notify", Capability: "send"}
	if res, err := d.Check(ctx, call); err != nil || !res.Allowed {
		t.Fatalf("check: %+v, %v", res, err)
	}
	if len(obs.stages) != 3 || len(obs.checks) != 1 {
		t.Fatalf("%d stage and %d check reports, want 3 and 1", len(obs.stages), len(obs.checks))
	}
	before := obs.stages[0]
	if len(before.Enrichments) != 1 || before.Enrichments["seed"] != "given" {
		t.Errorf("before_planning began with %v, want only the seed", before.Enrichments)
	}
	if len(obs.stages[1].PriorSteps) != 0 || len(obs.stages[2].PriorSteps) != 1 || obs.stages[2].PriorSteps[0].StepID != "step-1" {
		t.Errorf("prior steps = %v then %v, want none then step-1", obs.stages[1].PriorSteps, obs.stages[2].PriorSteps)
	}
	if obs.stages[2].Enrichments["added"] != "by the hook" {
		t.Errorf("after_planning began with %v, want the hook's enrichment", obs.stages[2].Enrichments)
	}
	st := obs.checks[0].State
	if st == nil || st.Phase != 2 || st.Runs["step-1"] != nil {
		t.Fatalf("check state = %+v, want phase 2 with step-1 not yet started", st)
	}
	unknown := op.Call{Operation: op.Turn, RequestID: "nobody", Request: "hi"}
	if _, err := d.Check(ctx, unknown); err != nil {
		t.Fatal(err)
	}
	if obs.checks[1].State != nil {
		t.Errorf("a check of an unknown request reports state %+v", obs.checks[1].State)
	}
	if _, err := s.AfterSynthesis(ctx, "sent"); err != nil {
		t.Fatal(err)
	}
	if synth := obs.stages[3]; synth.Draft != "sent" || synth.Response != "SENT" {
		t.Errorf("after_synthesis reported draft %q and response %q, want sent and SENT", synth.Draft, synth.Response)
	}
}

// EvaluateCall asks a generation what its binding and guards decide, writing nothing and
// beginning no observer.
func TestGeneration_EvaluateCallBindsThenGuards(t *testing.T) {
	began := 0
	runner, err := op.Compile(op.Set{
		PolicyRevision: "r1",
		Arounds: []op.Around{{Name: "audit", Operations: []op.Operation{op.ToolCall}, Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
			began++
			return ctx, nil
		}}},
		Guards: []op.Guard{{Name: "limit", Operations: []op.Operation{op.ToolCall}, Check: func(_ context.Context, c op.Call) error {
			if amount, _ := c.Parameters["amount"].(float64); amount > 100 {
				return op.Deny("trade_limit", "too much")
			}
			if c.Step == nil {
				return op.Deny("unbound", "the guard saw no plan step")
			}
			return nil
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := &engine.RequestState{ID: "r", Phase: 1, PriorSteps: []engine.RoutingStep{
		{StepID: "step-1", Namespace: "ns", AgentName: "a", Metadata: map[string]any{"capability": "trade", "parameters": map[string]any{"amount": 50.0}}},
		{StepID: "step-2", Namespace: "ns", AgentName: "a", Metadata: map[string]any{"capability": "trade", "parameters": map[string]any{"amount": 500.0}}},
	}, Runs: map[string]*engine.StepRun{"step-3": {Status: engine.RunSucceeded}}}
	st.PriorSteps = append(st.PriorSteps, engine.RoutingStep{StepID: "step-3", Namespace: "ns", AgentName: "a", Metadata: map[string]any{"capability": "trade"}})
	trade := func(step string, amount float64) op.Call {
		return op.Call{Operation: op.ToolCall, RequestID: "r", StepID: step, Namespace: "ns", AgentName: "a", Capability: "trade",
			Parameters: map[string]any{"amount": amount}}
	}
	for _, tc := range []struct {
		name    string
		binding engine.BindingMode
		st      *engine.RequestState
		call    op.Call
		want    string // "" allowed, else the denial code
	}{
		{"allowed", engine.BindingStrict, st, trade("step-1", 50), ""},
		{"a guard denies", engine.BindingStrict, st, trade("step-2", 500), "trade_limit"},
		{"not in the plan", engine.BindingStrict, st, trade("step-9", 50), engine.CodeNotInAcceptedPlan},
		{"other parameters", engine.BindingStrict, st, trade("step-1", 60), engine.CodePlanMismatch},
		{"identity binding lets them through", engine.BindingIdentity, st, trade("step-1", 60), ""},
		{"a step runs once", engine.BindingStrict, st, op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-3", Namespace: "ns", AgentName: "a", Capability: "trade"}, engine.CodeStepAlreadyExecuted},
		{"an unknown request has no plan", engine.BindingStrict, nil, trade("step-1", 50), engine.CodeNotInAcceptedPlan},
		{"binding off: the guards alone", engine.BindingOff, nil, trade("step-1", 50), "unbound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gen := &engine.Generation{ID: "g", Runner: runner, PolicyRevision: "r1", Binding: tc.binding}
			err := gen.EvaluateCall(context.Background(), tc.st, tc.call)
			code := ""
			if den, ok := op.AsDenial(err); ok {
				code = den.Code
			} else if err != nil {
				t.Fatalf("verdict error %v", err)
			}
			if code != tc.want {
				t.Fatalf("verdict %q, want %q", code, tc.want)
			}
		})
	}
	if began != 0 {
		t.Fatalf("an observer began %d times", began)
	}
	if st.Runs["step-1"] != nil {
		t.Fatal("a verdict wrote the state")
	}
	var ce *op.CallError
	if err := (&engine.Generation{}).EvaluateCall(context.Background(), nil, op.Call{Operation: "launch"}); !errors.As(err, &ce) {
		t.Fatalf("malformed call: %v, want a *op.CallError", err)
	}
}
