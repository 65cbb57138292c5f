package policy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/policy"
)

func Example() {
	src := `package agentd.plan

deny contains {"code": "capability_not_allowed", "step_id": step.step_id, "message": msg} if {
	some step in input.plan.steps
	not step.metadata.capability in data.agentd.allowed
	msg := sprintf("%s is not allowed", [step.metadata.capability])
}
`
	bundle, err := policy.Compile(
		[]policy.Module{{File: "plan.rego", Source: []byte(src)}},
		[]policy.DataFile{{File: "allowed.json", Path: []string{"agentd"}, Value: map[string]any{"allowed": []any{"stock_quote"}}}},
		policy.Options{Timeout: 50 * time.Millisecond},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	query, err := bundle.Prepare("data.agentd.plan")
	if err != nil {
		fmt.Println(err)
		return
	}
	plan := &engine.RoutingPlan{PlanID: "p1", Steps: []engine.RoutingStep{
		{StepID: "step-1", Metadata: map[string]any{"capability": "stock_quote"}},
		{StepID: "step-2", Metadata: map[string]any{"capability": "execute_trade"}},
	}}
	input, err := policy.PlanInput(plan, 1, "Buy AAPL", nil, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	decision, err := query.PlanDecision(context.Background(), input)
	if err != nil {
		fmt.Println("fail closed:", err)
		return
	}
	fmt.Println("allowed:", decision.Allowed())
	for _, v := range decision.Deny {
		fmt.Printf("%s %s: %s\n", v.StepID, v.Code, v.Message)
	}
	// Output:
	// allowed: false
	// step-2 capability_not_allowed: execute_trade is not allowed
}

func ExampleCompile_errors() {
	_, err := policy.Compile([]policy.Module{
		{File: "fetch.rego", Source: []byte("package fetch\n\nbody := http.send({\"method\": \"get\", \"url\": input.url}).body\n")},
		{File: "broken.rego", Source: []byte("package broken\n\nallow if input.x = = 1\n")},
	}, nil, policy.Options{})
	for _, e := range err.(diag.List) {
		fmt.Println(e.Kind, e.File, e.Line, e.Column)
	}
	// Output:
	// rego_parse broken.rego 3 20
	// rego_unsafe_builtin fetch.rego 3 9
}
