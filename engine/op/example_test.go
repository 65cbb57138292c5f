package op_test

import (
	"context"
	"errors"
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

// ExampleAround registers two observers of turns. Begin callbacks run in registration
// order, each handing its context on; the finish callbacks run in reverse order once
// the caller reports how the operation ended. Observers never block: a panicking one
// is logged and skipped.
func ExampleAround() {
	type spanKey struct{}
	trace := op.Around{Name: "trace", Operations: []op.Operation{op.Turn},
		Begin: func(ctx context.Context, call op.Call) (context.Context, op.FinishFunc) {
			fmt.Println("trace: begin", call.Operation)
			ctx = context.WithValue(ctx, spanKey{}, "span-1")
			return ctx, func(res op.Result) { fmt.Println("trace: end", res.Outcome) }
		}}
	audit := op.Around{Name: "audit", Operations: []op.Operation{op.Turn},
		Begin: func(ctx context.Context, call op.Call) (context.Context, op.FinishFunc) {
			fmt.Println("audit: begin in", ctx.Value(spanKey{}))
			return ctx, func(res op.Result) { fmt.Println("audit: end", res.Outcome, res.Err) }
		}}
	runner, err := op.Compile(op.Set{Arounds: []op.Around{trace, audit}})
	if err != nil {
		fmt.Println(err)
		return
	}
	call := op.Call{Operation: op.Turn, RequestID: "req-1", Request: "summarize my inbox"}
	_, finish, err := runner.Start(context.Background(), call)
	if finish == nil {
		fmt.Println("invalid call:", err)
		return
	}
	finish(op.Result{Outcome: op.Failed, Err: errors.New("model unavailable")})
	// Output:
	// trace: begin turn
	// audit: begin in span-1
	// audit: end failed model unavailable
	// trace: end failed
}

// ExampleRunner_Start_detachedContext shows the context bridge: an observer that returns
// a context detached from the one it was given adds its values, yet the operation keeps
// the runtime's values and is still canceled, with the runtime's cause, when the
// runtime cancels. Finish releases the bridge, canceling it with cause ErrFinished. (A
// runtime context that can never be canceled needs no bridge.)
func ExampleRunner_Start_detachedContext() {
	type tenantKey struct{}
	type traceKey struct{}
	runner, err := op.Compile(op.Set{Arounds: []op.Around{{Name: "tracer", Operations: []op.Operation{op.ToolCall},
		Begin: func(context.Context, op.Call) (context.Context, op.FinishFunc) {
			return context.WithValue(context.Background(), traceKey{}, "trace-7"), nil
		}}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	call := op.Call{Operation: op.ToolCall, RequestID: "req-1", StepID: "step-1", AgentName: "crm", Capability: "lookup"}

	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), tenantKey{}, "acme"))
	ctx, finish, _ := runner.Start(parent, call)
	fmt.Println("values:", ctx.Value(traceKey{}), ctx.Value(tenantKey{}))
	cancel(errors.New("client went away"))
	<-ctx.Done()
	fmt.Println("canceled:", ctx.Err(), "/", context.Cause(ctx))
	finish(op.Result{Outcome: op.Canceled, Err: ctx.Err()})

	parent, stop := context.WithCancel(context.Background())
	defer stop()
	ctx, finish, _ = runner.Start(parent, call)
	finish(op.Result{Outcome: op.Completed})
	fmt.Println("after finish:", context.Cause(ctx) == op.ErrFinished)
	// Output:
	// values: trace-7 acme
	// canceled: context canceled / client went away
	// after finish: true
}
