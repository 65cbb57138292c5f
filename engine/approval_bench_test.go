package engine_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// BenchmarkCheck_Approval is the cost approvals add to a check that needs none:
// without_rule runs a trade-limit guard that denies, rule_not_matching the same guard
// with effect require_approval (it asks engine.RequireApproval), both on calls under
// the limit, so neither fires. The goal is a difference of at most 2 µs (issue 37);
// make bench reports it under this name.
func BenchmarkCheck_Approval(b *testing.B) {
	limit := func(approval bool) *op.Runner {
		runner, err := op.Compile(op.Set{PolicyRevision: "r", Guards: []op.Guard{{Name: "trade-limit", Operations: []op.Operation{op.ToolCall},
			Check: func(ctx context.Context, c op.Call) error {
				if amount, _ := c.Parameters["amount"].(float64); amount <= 10000 {
					return nil
				}
				if approval {
					return engine.RequireApproval(ctx, engine.ApprovalAsk{Rule: "trade-limit", Code: "trade_limit", Reason: "trades above 10000 need approval"})
				}
				return op.Deny("trade_limit", "trades above 10000 are denied")
			}, ReadOnly: true, IgnoresStep: true}}})
		if err != nil {
			b.Fatal(err)
		}
		return runner
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name     string
		approval bool
	}{{"without_rule", false}, {"rule_not_matching", true}} {
		b.Run(bc.name, func(b *testing.B) {
			mem := store.NewMemory(store.MemoryOptions{Retention: store.Retention{MaxRecords: 1 << 10}})
			d, err := engine.NewDriver(engine.DriverConfig{
				Generations: engine.Fixed{Gen: &engine.Generation{ID: "g", Runner: limit(bc.approval), PolicyRevision: "r", Binding: engine.BindingOff}},
				States:      mem, Records: mem,
			})
			if err != nil {
				b.Fatal(err)
			}
			call := op.Call{Operation: op.ToolCall, RequestID: "req-bench", StepID: "step-1", Namespace: "finance", AgentName: "broker",
				Capability: "execute_trade", Parameters: map[string]any{"symbol": "ACME", "amount": 500.0}}
			ids := make([]string, 1<<12)
			for i := range ids {
				ids[i] = "req-bench-" + strconv.Itoa(i)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				// A request of its own per check (reused after 4,096): its record stays short.
				call.RequestID = ids[i%len(ids)]
				i++
				res, err := d.Check(ctx, call)
				if err != nil || !res.Allowed {
					b.Fatalf("check = %+v, %v", res, err)
				}
			}
		})
	}
}
