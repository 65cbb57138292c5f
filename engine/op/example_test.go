package op_test

import (
	"context"
	"fmt"

	"github.com/agentd-dev/agentd/engine/op"
)

func ExampleRunner_Start() {
	runner, err := op.Compile(op.Set{
		PolicyRevision: "limits-7",
		Arounds: []op.Around{{Name: "audit", Operations: []op.Operation{op.ToolCall},
			Begin: func(ctx context.Context, call op.Call) (context.Context, op.FinishFunc) {
				fmt.Println("begin", call.Capability)
				return ctx, func(res op.Result) { fmt.Println("finish", res.Outcome) }
			}}},
		Guards: []op.Guard{{Name: "trade_limit", Operations: []op.Operation{op.ToolCall},
			Check: func(_ context.Context, call op.Call) error {
				if qty, _ := call.Parameters["qty"].(float64); qty > 10000 {
					return op.Deny("trade_limit", "trades above 10000 need approval")
				}
				return nil
			}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	call := op.Call{Operation: op.ToolCall, RequestID: "req-1", StepID: "step-1",
		AgentName: "broker", Capability: "place_order", Parameters: map[string]any{"qty": 25000.0}}

	ctx, finish, err := runner.Start(context.Background(), call)
	if finish == nil {
		fmt.Println("invalid call:", err)
		return
	}
	if err != nil {
		finish(op.Result{Call: call, Outcome: op.Denied, Err: err})
		fmt.Println("blocked:", err)
		return
	}
	_ = ctx // the operation would run with ctx here
	finish(op.Result{Call: call, Outcome: op.Completed})
	// Output:
	// begin place_order
	// finish denied
	// blocked: denied (trade_limit): trades above 10000 need approval
}
