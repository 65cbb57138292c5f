package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/wiretest"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// Stored request states and records share accepted plans between revisions (they never
// change), so the driver keeps its own copy of the plans it accepts: a caller that
// changes the plan the answer gave it changes neither the stored state and record nor
// what binding allows.
func TestAcceptedSteps_TheAnswersPlanIsTheCallersOwn(t *testing.T) {
	ctx := context.Background()
	review := &planHook{name: "review"} // passes every plan
	d, mem := memoryDriver(t, engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: mustNew(t, []engine.Hook{review}, engine.WithCatalog(testCatalog(t))), Binding: engine.BindingStrict}})
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
	rec, err := mem.Get(ctx, "r")
	if err != nil || rec.Phases[0].Plan.Steps[0].AgentName != "notify" {
		t.Errorf("the recorded accepted plan changed with the answer's plan: %+v, %v", rec, err)
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

// A driver whose callers never change the plans they give or get (KeepPlans, the
// daemon's) keeps the answer's plan in the state and record as it is: no copy.
func TestAcceptedSteps_KeptAsTheyAreWhenTheDriverKeepsPlans(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory(store.MemoryOptions{})
	d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &engine.Generation{ID: "g",
		Pipeline: mustNew(t, nil, engine.WithCatalog(testCatalog(t))), Binding: engine.BindingStrict}}, States: mem, Records: mem, KeepPlans: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Open(ctx, "r", engine.Opening{Text: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.AfterPlanning(ctx, threeStepPlan(), 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _, _ := mem.GetRequest(ctx, "r")
	rec, _ := mem.Get(ctx, "r")
	if reflect.ValueOf(st.PriorSteps[0].Metadata).Pointer() != reflect.ValueOf(out.Plan.Steps[0].Metadata).Pointer() {
		t.Error("the stored state holds a copy of the accepted step's metadata, want the answer's own")
	}
	if rec.Phases[0].Plan != out.Plan {
		t.Error("the record holds a copy of the accepted plan, want the answer's own")
	}
}

// Records and states share the values their entries and runs hold between revisions
// (CopyRecord, CloneState), so every write replaces what it changes: a record or state
// read at any point of a request's life still reads the same after everything that
// follows it (an accepted and a rejected
// plan, a check and its finish, reported results, late and external effect updates,
// the caller changing what it passed in).
func TestStoredValues_NeverChangeOnceWritten(t *testing.T) {
	ctx := context.Background()
	var synthCtx context.Context
	hooks := []engine.Hook{
		&planHook{name: "review"}, // passes every plan
		&synthesisHook{name: "writer", fn: func(ctx context.Context, _ *engine.PipelineContext, r string) (string, error) {
			synthCtx = ctx
			return r, errors.Join(engine.ReportEffect(ctx, pending("late")), engine.ReportEffect(ctx, pending("external")))
		}},
	}
	d, mem := memoryDriver(t, engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: mustNew(t, hooks, engine.WithCatalog(testCatalog(t))), Binding: engine.BindingStrict}})
	type snapshot struct {
		after string
		value any // a record or a request state as read
		json  json.RawMessage
	}
	var seen []snapshot
	read := func(after string) {
		t.Helper()
		rec, err := mem.Get(ctx, "r")
		if err != nil {
			t.Fatalf("after %s: %v", after, err)
		}
		st, ok, err := mem.GetRequest(ctx, "r")
		if err != nil || !ok {
			t.Fatalf("after %s: state %v, %v", after, ok, err)
		}
		for _, v := range []any{rec, st} {
			data, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, snapshot{after, v, json.RawMessage(data)})
		}
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		read(what)
	}

	s, err := d.Open(ctx, "r", engine.Opening{Text: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.BeforePlanning(ctx)
	must("before_planning", err)
	plan := threeStepPlan()
	out, err := s.AfterPlanning(ctx, plan, 0)
	must("an accepted plan", err)
	out.Plan.Steps[0].Metadata["parameters"].(map[string]any)["city"] = "changed by the caller"
	out.Invocations[0].Decision.Reason = "changed by the caller"
	plan.Steps[0].Metadata["parameters"].(map[string]any)["city"] = "changed by the caller"
	bad := threeStepPlan()
	bad.PlanID, bad.PhaseNumber, bad.Steps = "plan-2", 2, bad.Steps[:1]
	bad.Steps[0].AgentName = "nobody"
	if _, err := s.AfterPlanning(ctx, bad, 0); !errors.Is(err, engine.ErrInvalidPlan) {
		t.Fatalf("an invalid plan: %v", err)
	}
	read("a rejected plan")
	bad.Steps[0].Instruction = "changed by the caller"

	call := op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-1", Namespace: "tools", AgentName: "weather",
		Capability: "forecast", Parameters: map[string]any{"city": "Oslo", "days": float64(2)}}
	res, err := d.Check(ctx, call)
	if err == nil && !res.Allowed {
		err = fmt.Errorf("denied: %+v", res.Denial)
	}
	must("a check", err)
	response := map[string]any{"data": map[string]any{"temp": 3.0}}
	must("its finish", d.Finish(ctx, engine.Finish{RequestID: "r", StepID: "step-1", Status: engine.RunSucceeded, Response: response}))
	response["data"].(map[string]any)["temp"] = "changed by the caller"
	result := &engine.ExecutionResult{PlanID: "plan-1", Steps: []engine.StepResult{
		{StepID: "step-1", AgentName: "weather", Namespace: "tools", Capability: "forecast", Success: true, Response: map[string]any{"temp": 3.0}},
		{StepID: "step-2", AgentName: "weather", Namespace: "tools", Capability: "alerts", Success: true, Response: []any{"none"}},
	}}
	_, err = s.AfterExecution(ctx, result)
	must("after_execution", err)
	must("results reported again", s.ReportResults(ctx, &engine.ExecutionResult{PlanID: "plan-1", Steps: result.Steps[1:]}))
	result.Steps[1].Response.([]any)[0] = "changed by the caller"
	_, err = s.AfterSynthesis(ctx, "3 degrees")
	must("after_synthesis", err)
	must("a late effect update", engine.ReportEffect(synthCtx, terminal("late", engine.EffectSucceeded, `{"n":1}`)))
	must("an effect completed by id", d.CompleteEffect(ctx, "r", terminal("external", engine.EffectFailed, `{"n":2}`)))

	for _, snap := range seen {
		wiretest.Same(t, fmt.Sprintf("the %T read after %s", snap.value, snap.after), snap.value, snap.json)
	}
	for _, last := range seen[len(seen)-2:] {
		if strings.Contains(string(last.json), "changed by the caller") {
			t.Errorf("the store holds a value its caller changed after passing it:\n%s", last.json)
		}
	}
}
