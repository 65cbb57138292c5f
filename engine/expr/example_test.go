package expr_test

import (
	"context"
	"fmt"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/engine/op"
)

func Example() {
	c, err := expr.NewCompiler(expr.Options{})
	if err != nil {
		panic(err)
	}
	denyIf, err := c.Compile(expr.Guard,
		"call.capability == 'execute_trade' && double(call.parameters.amount) > 10000.0", expr.Bool)
	if err != nil {
		panic(err)
	}
	vars := &expr.Vars{Call: &op.Call{Operation: op.ToolCall, RequestID: "r1", StepID: "s1",
		AgentName: "broker", Capability: "execute_trade", Parameters: map[string]any{"amount": 25000}}}
	deny, err := denyIf.EvalBool(context.Background(), vars)
	fmt.Println(deny, err)

	_, err = c.Compile(expr.BeforePlanning, "size(plan.steps) > 0", expr.Bool)
	fmt.Println(err)
	// Output:
	// true <nil>
	// 1:6: cel_undeclared_variable: variable "plan" is not available in before_planning (available in after_planning, plan_step)
}

func ExampleVars_SetStep() {
	c, _ := expr.NewCompiler(expr.Options{})
	where, _ := c.Compile(expr.PlanStep, "step.metadata.capability == 'execute_trade'", expr.Bool)
	plan := &engine.RoutingPlan{Steps: []engine.RoutingStep{
		{StepID: "quote", Metadata: map[string]any{"capability": "get_quote"}},
		{StepID: "trade", Metadata: map[string]any{"capability": "execute_trade"}},
	}}
	vars := &expr.Vars{Plan: plan}
	for i := range plan.Steps {
		vars.SetStep(&plan.Steps[i])
		remove, _ := where.EvalBool(context.Background(), vars)
		fmt.Println(plan.Steps[i].StepID, remove)
	}
	// Output:
	// quote false
	// trade true
}
