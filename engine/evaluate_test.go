package engine_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// TestEvaluate_ReviewsLikeAfterPlanningAndChangesNothing runs the same plans through
// Evaluate and AfterPlanning: the answers agree, and only AfterPlanning leaves a trace.
func TestEvaluate_ReviewsLikeAfterPlanningAndChangesNothing(t *testing.T) {
	catalog, err := engine.NewCatalog([]engine.CatalogAgent{{Namespace: "ns", Agent: "tools", Capabilities: []engine.Capability{{Name: "echo"}, {Name: "wipe"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var phases []int
	review := &requiredHook{planHook{name: "review", fn: func(ctx context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		if info, _ := engine.RequestInfoFrom(ctx); info.ID != "req-1" {
			t.Errorf("the hook sees request %q", info.ID)
		}
		phases = append(phases, plan.PhaseNumber)
		if plan.Steps[0].Capability() == "wipe" {
			return nil, errors.New("wipe is not allowed")
		}
		return plan, nil
	}}}
	p, err := engine.New([]engine.Hook{review}, engine.WithCatalog(catalog))
	if err != nil {
		t.Fatal(err)
	}
	d, mem := memoryDriver(t, engine.Fixed{Gen: &engine.Generation{ID: "gen-test", Pipeline: p}})
	ctx := context.Background()
	plan := func(id, capability string) *engine.RoutingPlan {
		return &engine.RoutingPlan{PlanID: "p-" + id, Steps: []engine.RoutingStep{{
			StepID: id, Namespace: "ns", AgentName: "tools", Metadata: map[string]any{"capability": capability},
		}}}
	}
	sess, err := d.Resume(ctx, engine.StageAfterPlanning, "req-1", engine.Opening{})
	if err != nil {
		t.Fatal(err)
	}

	if out, err := sess.Evaluate(ctx, plan("step-1", "echo")); err != nil || out.Steps[0].StepID != "step-1" || out.PhaseNumber != 1 {
		t.Fatalf("Evaluate(echo) = %+v, %v; want the plan accepted as phase 1", out, err)
	}
	if _, err := sess.Evaluate(ctx, plan("step-1", "wipe")); !isRequiredRejection(err) {
		t.Errorf("Evaluate(wipe) error = %v, want the required hook's rejection", err)
	}
	var pe *engine.PlanError
	if _, err := sess.Evaluate(ctx, plan("step-1", "format")); !errors.As(err, &pe) || pe.Rule != 3 {
		t.Errorf("Evaluate(unknown capability) error = %v, want plan rule 3", err)
	}
	if _, err := mem.Get(ctx, "req-1"); !errors.Is(err, engine.ErrRecordNotFound) {
		t.Fatalf("Evaluate wrote a record (err %v)", err)
	}

	if _, err := sess.AfterPlanning(ctx, plan("step-1", "echo"), 0); err != nil {
		t.Fatal(err)
	}
	// A preview after phase 1 is reviewed as phase 2, against phase 1's steps.
	if _, err := sess.Evaluate(ctx, plan("step-1", "echo")); !errors.As(err, &pe) || pe.Rule != 8 {
		t.Errorf("Evaluate reusing an executed step id: error %v, want plan rule 8", err)
	}
	if out, err := sess.Evaluate(ctx, plan("step-2", "echo")); err != nil || out.PhaseNumber != 2 {
		t.Errorf("Evaluate(step-2) = %+v, %v; want phase 2", out, err)
	}
	rec, err := mem.Get(ctx, "req-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Phases) != 1 || len(rec.PipelineHooks) != 1 || rec.Revision != 1 {
		t.Errorf("record after one phase and evaluations: %d phases, %d invocations, revision %d; want 1, 1, 1",
			len(rec.Phases), len(rec.PipelineHooks), rec.Revision)
	}
	if want := []int{1, 1, 1, 2}; !slices.Equal(phases, want) {
		t.Errorf("the hook saw phases %v, want %v", phases, want)
	}
}

func isRequiredRejection(err error) bool {
	_, ok := engine.AsRequiredAfterPlanningError(err)
	return ok
}

// TestEvaluate_UsesTheGenerationsLimits: with max_steps 1, a two-step plan gets the
// same plan-rule error from Evaluate as from AfterPlanning (not a review under the
// default limits), and both hooks' calls see the same request context.
func TestEvaluate_UsesTheGenerationsLimits(t *testing.T) {
	catalog, err := engine.NewCatalog([]engine.CatalogAgent{{Namespace: "ns", Agent: "tools", Capabilities: []engine.Capability{{Name: "echo"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var seen []engine.RequestInfo
	review := &requiredHook{planHook{name: "review", fn: func(ctx context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		info, _ := engine.RequestInfoFrom(ctx)
		seen = append(seen, info)
		return plan, nil
	}}}
	p, err := engine.New([]engine.Hook{review}, engine.WithCatalog(catalog), engine.WithPlanLimits(engine.PlanLimits{MaxSteps: 1}))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := memoryDriver(t, engine.Fixed{Gen: &engine.Generation{ID: "gen-limits", Pipeline: p}})
	ctx := context.Background()
	plan := func(ids ...string) *engine.RoutingPlan {
		out := &engine.RoutingPlan{PlanID: "p"}
		for _, id := range ids {
			out.Steps = append(out.Steps, engine.RoutingStep{StepID: id, Namespace: "ns", AgentName: "tools", Metadata: map[string]any{"capability": "echo"}})
		}
		return out
	}
	sess, err := d.Resume(ctx, engine.StageAfterPlanning, "req-limits", engine.Opening{})
	if err != nil {
		t.Fatal(err)
	}
	_, evalErr := sess.Evaluate(ctx, plan("step-1", "step-2"))
	_, realErr := sess.AfterPlanning(ctx, plan("step-1", "step-2"), 0)
	var ep, rp *engine.PlanError
	if !errors.As(evalErr, &ep) || !errors.As(realErr, &rp) || ep.Rule != rp.Rule || ep.Code != rp.Code {
		t.Fatalf("a plan over max_steps: Evaluate %v, AfterPlanning %v; want the same plan-rule error", evalErr, realErr)
	}
	if len(seen) != 0 {
		t.Fatalf("the hook reviewed a plan over the limits: %+v", seen)
	}
	sess, err = d.Resume(ctx, engine.StageAfterPlanning, "req-limits-2", engine.Opening{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Evaluate(ctx, plan("step-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.AfterPlanning(ctx, plan("step-1"), 0); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0].ID != seen[1].ID || seen[0].Generation != seen[1].Generation || seen[0].Phase != seen[1].Phase || seen[0].Failed != seen[1].Failed {
		t.Errorf("Evaluate's hook saw %+v, AfterPlanning's %+v", seen[0], seen[1])
	}
}
