package expr

import (
	"context"
	"slices"
	"testing"

	"github.com/google/cel-go/common/types"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/wiretest"
)

// resolved is what an expression sees for variable name, as a Go value (null as nil).
func resolved(vars *Vars, name string) any {
	v, _ := vars.ResolveName(name)
	if v == types.NullValue {
		return nil
	}
	return v
}

// TestVars_AgreesWithJSON: what expressions see of generated plans, steps, results and
// calls, nil ones and nil steps included, is their encoding/json form.
func TestVars_AgreesWithJSON(t *testing.T) {
	r := wiretest.Rand(3)
	for range 1000 {
		p, res, call := wiretest.Plan(r), wiretest.Result(r), wiretest.Call(r)
		vars := &Vars{Plan: p, Result: res, Call: call}
		if len(p.Steps) > 0 {
			vars.Step = &p.Steps[0]
		}
		wiretest.Same(t, "plan", resolved(vars, "plan"), wiretest.JSON(t, vars.Plan))
		wiretest.Same(t, "step", resolved(vars, "step"), wiretest.JSON(t, vars.Step))
		wiretest.Same(t, "result", resolved(vars, "result"), wiretest.JSON(t, vars.Result))
		seen := resolved(vars, "call").(map[string]any)
		if labels, ok := seen["labels"].([]any); !ok || len(labels) != 0 {
			t.Fatalf("call.labels = %#v, want an empty list", seen["labels"])
		}
		delete(seen, "labels") // the engine's, not part of the call's JSON
		wiretest.Same(t, "call", seen, wiretest.JSON(t, vars.Call))
	}
}

func TestVars_CallStep(t *testing.T) {
	c := newCompiler(t, 0)
	src := "has(call.step) && call.step.step_id == call.step_id"
	call := sampleCall(1.0)
	call.StepID = "s1"
	for _, tt := range []struct {
		step map[string]any
		want bool
	}{{nil, false}, {map[string]any{"step_id": "s1"}, true}} {
		call.Step = tt.step
		if ok, err := mustCompile(t, c, Guard, src, Bool).EvalBool(context.Background(), &Vars{Call: call}); err != nil || ok != tt.want {
			t.Errorf("step %v: %q = %v, %v; want %v", tt.step, src, ok, err, tt.want)
		}
	}
}

// TestVars_NilStepsAreNull: a plan without steps has null steps, as in JSON; using them
// as a list is an evaluation error, which the caller's failure policy handles.
func TestVars_NilStepsAreNull(t *testing.T) {
	c := newCompiler(t, 0)
	vars := &Vars{Plan: &engine.RoutingPlan{PlanID: "p"}, Result: &engine.ExecutionResult{}}
	for _, tt := range []struct {
		scope Scope
		src   string
	}{
		{AfterPlanning, "plan.steps == null && has(plan.steps)"},
		{AfterExecution, "result.steps == null"},
	} {
		if ok, err := mustCompile(t, c, tt.scope, tt.src, Bool).EvalBool(context.Background(), vars); err != nil || !ok {
			t.Errorf("%q = %v, %v; want true", tt.src, ok, err)
		}
	}
	_, err := mustCompile(t, c, AfterPlanning, "size(plan.steps) == 0", Bool).EvalBool(context.Background(), vars)
	wantEvalKind(t, err, EvalFailed)
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
