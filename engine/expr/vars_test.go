package expr

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// jsonKeys returns the top-level keys of v's JSON encoding.
func jsonKeys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(m))
}

// TestVars_JSONShape checks the hand-written conversions against encoding/json: the same
// field names, and omitempty fields present exactly when JSON has them.
func TestVars_JSONShape(t *testing.T) {
	full := samplePlan()
	full.ContinuationNote = "more"
	full.NeedsUserInput = &engine.NeedsUserInput{Question: "how many?", MissingFields: []string{"qty"}}
	fullStep := full.Steps[1]
	fullStep.ImplicitDeps = []string{"s0"}
	fullResult := sampleResult()
	fullResult.Steps[1].Skipped, fullResult.Steps[1].SkipReason = true, "denied"
	fullResult.Steps[1].Parameters = map[string]any{"qty": 10}
	fullCall := op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "s", Namespace: "n", AgentName: "a",
		Capability: "c", Parameters: map[string]any{"x": 1}, Model: "m", Phase: 2, Request: "q",
		Metadata: map[string]any{"k": "v"}}
	tests := []struct {
		name string
		v    any
		got  map[string]any
	}{
		{"full plan", full, planObject(full)},
		{"zero plan", &engine.RoutingPlan{Steps: []engine.RoutingStep{}}, planObject(&engine.RoutingPlan{})},
		{"full step", &fullStep, stepObject(&fullStep)},
		{"zero step", &engine.RoutingStep{}, stepObject(&engine.RoutingStep{})},
		{"needs user input", full.NeedsUserInput, planObject(full)["needs_user_input"].(map[string]any)},
		{"full result", fullResult, resultObject(fullResult)},
		{"full step result", &fullResult.Steps[1], stepResultObject(&fullResult.Steps[1])},
		{"zero step result", &engine.StepResult{}, stepResultObject(&engine.StepResult{})},
		{"full call", &fullCall, callObject(&fullCall)},
		{"zero call", &op.Call{}, callObject(&op.Call{})},
	}
	for _, tt := range tests {
		if got, want := slices.Sorted(maps.Keys(tt.got)), jsonKeys(t, tt.v); !slices.Equal(got, want) {
			t.Errorf("%s: keys = %v, want %v", tt.name, got, want)
		}
	}
}

func TestVars_ConvertedValues(t *testing.T) {
	plan := planObject(samplePlan())
	b, _ := json.Marshal(planTime)
	if want := string(b[1 : len(b)-1]); plan["created_at"] != want {
		t.Errorf("created_at = %v, want %v as encoding/json writes it", plan["created_at"], want)
	}
	if plan["terminal"] != false || plan["phase_number"] != int64(1) || plan["mode"] != "workflow" {
		t.Errorf("plan = %v", plan)
	}
	if steps := planObject(&engine.RoutingPlan{})["steps"]; !reflect.DeepEqual(steps, []any{}) {
		t.Errorf("nil steps = %#v, want an empty list", steps)
	}
	result := resultObject(sampleResult())
	step := result["steps"].([]any)[1].(map[string]any)
	if result["total_duration"] != int64(1500*time.Millisecond) || step["duration"] != int64(500*time.Millisecond) ||
		step["attempts"] != int64(2) || step["error"] != "rejected" {
		t.Errorf("result = %v", result)
	}
}

func TestVars_LazyConversionAndReset(t *testing.T) {
	c := newCompiler(t, 0)
	id := mustCompile(t, c, AfterPlanning, "plan.plan_id", String)
	ctx := context.Background()
	vars := &Vars{Plan: samplePlan()}
	if vars.plan != nil {
		t.Fatal("plan converted before use")
	}
	mustCompile(t, c, AfterPlanning, "phase == 0", Bool).EvalBool(ctx, vars)
	if vars.plan != nil {
		t.Fatal("plan converted by an expression that does not use it")
	}
	if got, _ := id.EvalString(ctx, vars); got != "plan-1" {
		t.Fatalf("plan_id = %q", got)
	}
	vars.Plan = &engine.RoutingPlan{PlanID: "plan-2"}
	if got, _ := id.EvalString(ctx, vars); got != "plan-1" {
		t.Errorf("plan_id before Reset = %q, want the cached plan-1", got)
	}
	vars.Reset()
	if got, _ := id.EvalString(ctx, vars); got != "plan-2" {
		t.Errorf("plan_id after Reset = %q, want plan-2", got)
	}
}

func TestVars_SetStepKeepsPlan(t *testing.T) {
	where := mustCompile(t, newCompiler(t, 0), PlanStep,
		"step.metadata.capability == 'execute_trade' && size(plan.steps) == 2", Bool)
	plan := samplePlan()
	vars := &Vars{Plan: plan}
	var matched []string
	for i := range plan.Steps {
		vars.SetStep(&plan.Steps[i])
		ok, err := where.EvalBool(context.Background(), vars)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			matched = append(matched, plan.Steps[i].StepID)
		}
	}
	if !slices.Equal(matched, []string{"s2"}) {
		t.Errorf("matched %v, want [s2]", matched)
	}
}

func TestVars_NilValues(t *testing.T) {
	c := newCompiler(t, 0)
	tests := []struct {
		scope Scope
		src   string
	}{
		{BeforePlanning, "size(metadata) == 0 && size(enrichments) == 0 && request == ''"},
		{AfterPlanning, "plan == null && phase == 0"},
		{PlanStep, "step == null"},
		{AfterExecution, "result == null"},
		{Guard, "size(call) == 0"},
	}
	for _, tt := range tests {
		for _, vars := range []*Vars{nil, {}} {
			if ok, err := mustCompile(t, c, tt.scope, tt.src, Bool).EvalBool(context.Background(), vars); err != nil || !ok {
				t.Errorf("%s: %q = %v, %v; want true", tt.scope, tt.src, ok, err)
			}
		}
	}
}
