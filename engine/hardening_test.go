package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// A re-sent plan_id is replayed from the record only when the plan is the same plan:
// one with a changed or an extra step is reviewed as what it is, and its repeated step
// id breaks plan rule 8, so the old answer never stands in for a new plan.
func TestHardening_ResentPlanReplayedOnlyWhenIdentical(t *testing.T) {
	ctx := context.Background()
	review := &planHook{name: "review"} // passes every plan
	d, mem := memoryDriver(t, engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: mustNew(t, []engine.Hook{review}, engine.WithCatalog(testCatalog(t)))}})
	small := func(amount float64, extra ...engine.RoutingStep) *engine.RoutingPlan {
		p := &engine.RoutingPlan{PlanID: "p1", Steps: []engine.RoutingStep{{StepID: "step-1", AgentName: "notify", Namespace: "tools",
			Instruction: "buy", Metadata: map[string]any{"capability": "send", "parameters": map[string]any{"amount": amount}}}}}
		p.Steps = append(p.Steps, extra...)
		return p
	}
	plan := func(p *engine.RoutingPlan) (*engine.PlanResult, error) {
		s, err := d.Resume(ctx, engine.StageAfterPlanning, "r", engine.Opening{Text: "buy"})
		if err != nil {
			t.Fatal(err)
		}
		return s.AfterPlanning(ctx, p, 0)
	}
	if out, err := plan(small(10)); err != nil || out.Replayed {
		t.Fatalf("first plan: %+v, %v", out, err)
	}
	if out, err := plan(small(10)); err != nil || !out.Replayed {
		t.Fatalf("identical re-send: %+v, %v, want replayed", out, err)
	}
	extra := engine.RoutingStep{StepID: "step-2", AgentName: "notify", Namespace: "tools", Instruction: "again",
		Metadata: map[string]any{"capability": "send", "parameters": map[string]any{"amount": 1e6}}}
	for name, p := range map[string]*engine.RoutingPlan{"changed parameter": small(1e6), "extra step": small(10, extra)} {
		out, err := plan(p)
		pe, ok := engine.AsPlanError(err)
		if !ok || pe.Code != engine.PlanCodeRepeatedStepID {
			t.Fatalf("%s re-sent under p1: %+v, %v, want repeated_step_id", name, out, err)
		}
	}
	rec, err := mem.Get(ctx, "r")
	if err != nil || len(rec.Phases) != 1 {
		t.Fatalf("record phases = %d, %v, want the one accepted phase", len(rec.Phases), err)
	}
}

// A record cannot grow with every call on one id: past MaxRecordEntries the call is
// refused (request_too_large) and nothing is written.
func TestHardening_RecordEntriesAreCapped(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory(store.MemoryOptions{})
	d, err := engine.NewDriver(engine.DriverConfig{
		Generations: engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: mustNew(t, nil), Binding: engine.BindingOff}},
		States:      mem, Records: mem, MaxRecordEntries: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	call := op.Call{Operation: op.Turn, RequestID: "r", Request: "hi"}
	var refused *engine.RefusalError
	for i := range 10 {
		_, err := d.Check(ctx, call)
		if err == nil {
			continue
		}
		r, ok := engine.AsRefusal(err)
		if !ok || r.Code != engine.RefusedTooLarge || !errors.Is(err, engine.ErrTooLarge) {
			t.Fatalf("check %d: %v, want request_too_large", i+1, err)
		}
		refused = r
		break
	}
	rec, _ := mem.Get(ctx, "r")
	if refused == nil || rec == nil || len(rec.Operations) != 5 {
		t.Fatalf("refused %v, record holds %v operations, want the call past 5 refused", refused, rec)
	}
}
