package engine_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
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

// TestEvaluate_SeesTheRealPathsContext runs a request through before_planning, one
// phase and after_synthesis, then asks EvaluateBeforePlanning and EvaluateSynthesis
// about each stage call from its report alone: the hooks see the same request context
// (id, generation, phase, failed, cache gate), the answers agree, and the evaluations
// change nothing (not the enrichments they were given, not the record).
func TestEvaluate_SeesTheRealPathsContext(t *testing.T) {
	type seen struct {
		info engine.RequestInfo
		vary map[string]string
	}
	var before, after []seen
	gate := &decisionHook{name: "gate", fn: func(ctx context.Context, pctx *engine.PipelineContext, g engine.Gate) (*engine.ShortCircuitDecision, error) {
		info, _ := engine.RequestInfoFrom(ctx)
		before = append(before, seen{info, g.CacheVary()})
		pctx.Enrichments["gate_ran"] = true
		if pctx.Request == "stop" {
			return &engine.ShortCircuitDecision{Kind: engine.KindAuthoritative, ShortCircuit: &engine.ShortCircuit{Response: "stopped", Source: "gate"}}, nil
		}
		return nil, nil
	}}
	polish := &synthesisHook{name: "polish", fn: func(ctx context.Context, pctx *engine.PipelineContext, response string) (string, error) {
		info, _ := engine.RequestInfoFrom(ctx)
		after = append(after, seen{info, info.Gate.CacheVary()})
		return fmt.Sprintf("%s (phase %d, failed %t, topic %v)", response, info.Phase, info.Failed, pctx.Enrichments["topic"]), nil
	}}
	review := &requiredHook{planHook{name: "review"}}
	p := mustNew(t, []engine.Hook{gate, review, polish}, engine.WithCatalog(testCatalog(t)))
	reports := &reportLog{}
	mem := store.NewMemory(store.MemoryOptions{})
	gen := &engine.Generation{ID: "gen-ctx", Pipeline: p}
	d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: gen},
		States: mem, Records: mem, Observer: reports})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, text := range []string{"go", "stop"} {
		sess, err := d.Open(ctx, "req-"+text, engine.Opening{Text: text, Metadata: map[string]any{"user": "u1"},
			Enrichments: map[string]any{"topic": "stocks"}, CacheVary: map[string]string{"locale": "en"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sess.BeforePlanning(ctx); err != nil {
			t.Fatal(err)
		}
		if text == "stop" {
			continue
		}
		if _, err := sess.AfterPlanning(ctx, threeStepPlan(), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := sess.AfterSynthesis(ctx, "draft"); err != nil {
			t.Fatal(err)
		}
	}
	revisions := map[string]int64{}
	for _, id := range []string{"req-go", "req-stop"} {
		rec, err := mem.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		revisions[id] = rec.Revision
	}

	realBefore, realAfter := len(before), len(after)
	for _, r := range reports.stages {
		w := engine.WhatIf{RequestID: r.RequestID, Request: r.Request, Metadata: r.Metadata, Enrichments: r.Enrichments,
			Prior: r.PriorSteps, Phase: r.Phase, Failed: r.Failed, CacheVary: map[string]string{"locale": "en"}}
		switch r.Stage {
		case engine.StageBeforePlanning:
			given := maps.Clone(r.Enrichments)
			sc, err := gen.EvaluateBeforePlanning(ctx, w)
			if err != nil {
				t.Fatalf("%s: EvaluateBeforePlanning: %v", r.RequestID, err)
			}
			if got, want := sc != nil, r.Outcome == engine.OutcomeShortCircuit; got != want {
				t.Errorf("%s: what-if short circuit %t, the real call's outcome %s", r.RequestID, got, r.Outcome)
			}
			if !reflect.DeepEqual(r.Enrichments, given) {
				t.Errorf("%s: the evaluation wrote the enrichments it was given: %v", r.RequestID, r.Enrichments)
			}
		case engine.StageAfterSynthesis:
			if got := gen.EvaluateSynthesis(ctx, w, r.Draft); got != r.Response {
				t.Errorf("what-if response %q, the real call's %q", got, r.Response)
			}
		}
	}
	if len(before) != 2*realBefore || len(after) != 2*realAfter || realAfter != 1 {
		t.Fatalf("hook calls: before_planning %d then %d, after_synthesis %d then %d", realBefore, len(before), realAfter, len(after))
	}
	for i := range realBefore {
		if !reflect.DeepEqual(before[i], before[realBefore+i]) {
			t.Errorf("before_planning: the real call's hook saw %+v, the evaluation's %+v", before[i], before[realBefore+i])
		}
	}
	if !reflect.DeepEqual(after[0], after[1]) || after[0].info.Phase != 1 {
		t.Errorf("after_synthesis: the real call's hook saw %+v, the evaluation's %+v (want phase 1)", after[0], after[1])
	}
	for id, rev := range revisions {
		if rec, err := mem.Get(ctx, id); err != nil || rec.Revision != rev {
			t.Errorf("%s after the evaluations: revision %d (err %v), want %d", id, rec.Revision, err, rev)
		}
	}
}
