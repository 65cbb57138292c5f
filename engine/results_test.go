package engine_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// Reported results are filed under the phase whose plan has their step, and give a run
// only to accepted steps: a result for a step no phase accepted is kept in the record's
// result but starts no run.
func TestReportedResults_FiledByPhaseRunsForAcceptedStepsOnly(t *testing.T) {
	ctx := context.Background()
	accept := &planHook{name: "review"} // passes every plan
	d, mem := memoryDriver(t, engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: mustNew(t, []engine.Hook{accept})}})
	s, err := d.Open(ctx, "r", engine.Opening{Text: "weather", PhasesIndependent: true})
	if err != nil {
		t.Fatal(err)
	}
	for phase, ids := range [][]string{{"step-1", "step-2"}, {"step-3"}} {
		plan := threeStepPlan()
		plan.PlanID, plan.PhaseNumber = "plan-"+ids[0], phase+1
		plan.Steps = slices.DeleteFunc(plan.Steps, func(st engine.RoutingStep) bool { return !slices.Contains(ids, st.StepID) })
		for i := range plan.Steps {
			plan.Steps[i].DependsOn = nil
			plan.Steps[i].Metadata["parameters"] = map[string]any{}
		}
		if _, err := s.AfterPlanning(ctx, plan, 0); err != nil {
			t.Fatalf("phase %d: %v", phase+1, err)
		}
	}
	result := &engine.ExecutionResult{PlanID: "plan-step-3", Steps: []engine.StepResult{
		{StepID: "step-3", Success: true, Response: "sent"},
		{StepID: "step-x", Success: true, Response: "never accepted"},
		{StepID: "step-1", Success: false, Error: "down"},
		{StepID: "step-2", Success: true, Response: 2.0},
	}}
	if _, err := s.AfterExecution(ctx, result); err != nil {
		t.Fatal(err)
	}
	st, ok, err := mem.GetRequest(ctx, "r")
	if err != nil || !ok {
		t.Fatalf("state: %v, %v", ok, err)
	}
	runs := map[string]engine.RunStatus{}
	for id, run := range st.Runs {
		runs[id] = run.Status
	}
	want := map[string]engine.RunStatus{"step-1": engine.RunFailed, "step-2": engine.RunSucceeded, "step-3": engine.RunSucceeded}
	if !maps.Equal(runs, want) {
		t.Errorf("runs = %v, want %v", runs, want)
	}
	rec, err := mem.Get(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var filed [][]string
	for _, ph := range rec.Phases {
		var ids []string
		for _, r := range ph.Results {
			ids = append(ids, r.StepID)
		}
		filed = append(filed, ids)
	}
	if wantFiled := [][]string{{"step-1", "step-2"}, {"step-3"}}; !slices.EqualFunc(filed, wantFiled, slices.Equal[[]string]) {
		t.Errorf("results by phase = %v, want %v", filed, wantFiled)
	}
	if rec.Result == nil || len(rec.Result.Steps) != 4 {
		t.Errorf("record result = %+v, want all four results", rec.Result)
	}
}
