package engine_test

import (
	"context"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// Stored request states share accepted steps between revisions (they never change), so
// the driver keeps its own copy of the steps it accepts: a caller that changes the plan
// the answer gave it changes neither the stored state nor what binding allows.
func TestAcceptedSteps_TheAnswersPlanIsTheCallersOwn(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory(store.MemoryOptions{})
	review := &planHook{name: "review", fn: func(_ context.Context, _ *engine.PipelineContext, p *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		return p, nil
	}}
	d, err := engine.NewDriver(engine.DriverConfig{
		Generations: engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: mustNew(t, []engine.Hook{review}, engine.WithCatalog(testCatalog(t))),
			Binding: engine.BindingStrict}},
		States: mem, Records: mem,
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Open(ctx, "r", engine.Opening{Text: "send"})
	if err != nil {
		t.Fatal(err)
	}
	plan := &engine.RoutingPlan{PlanID: "p1", Steps: []engine.RoutingStep{{StepID: "step-1", AgentName: "notify", Namespace: "tools",
		Instruction: "send", Metadata: map[string]any{"capability": "send", "parameters": map[string]any{"to": "ops"}}}}}
	out, err := s.AfterPlanning(ctx, plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	out.Plan.Steps[0].Metadata["parameters"].(map[string]any)["to"] = "everyone"
	out.Plan.Steps[0].AgentName = "changed"
	st, ok, err := mem.GetRequest(ctx, "r")
	if err != nil || !ok || len(st.PriorSteps) != 1 {
		t.Fatalf("stored state: %+v, %v, %v", st, ok, err)
	}
	step := st.PriorSteps[0]
	if step.AgentName != "notify" || step.Metadata["parameters"].(map[string]any)["to"] != "ops" {
		t.Errorf("the stored accepted step changed with the answer's plan: %+v", step)
	}
	call := op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-1", Namespace: "tools", AgentName: "notify",
		Capability: "send", Parameters: map[string]any{"to": "everyone"}}
	if res, err := d.Check(ctx, call); err != nil || res.Allowed || res.Denial.Code != "plan_mismatch" {
		t.Errorf("a call with the changed parameter: %+v, %v, want plan_mismatch", res, err)
	}
	call.Parameters = map[string]any{"to": "ops"}
	if res, err := d.Check(ctx, call); err != nil || !res.Allowed {
		t.Errorf("a call as accepted: %+v, %v, want allowed", res, err)
	}
}
