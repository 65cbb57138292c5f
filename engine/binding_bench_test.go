package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// BenchmarkCheck_Binding measures one allowed tool_call check in process on the memory
// store, with plan binding off and strict: the difference is binding's cost (finding the
// accepted step, comparing identity and parameters, and writing the step's claim). Each
// strict check binds a step no check has claimed yet: a new request with a 3-step plan
// is opened (timer stopped) every 3 checks.
func BenchmarkCheck_Binding(b *testing.B) {
	catalog, err := engine.NewCatalog([]engine.CatalogAgent{{Namespace: "demo-tools", Agent: "stock-service",
		Capabilities: []engine.Capability{{Name: "stock_quote"}}}})
	if err != nil {
		b.Fatal(err)
	}
	p := mustNew(b, []engine.Hook{&passRequired{passPlan{"allowed-operations"}}}, engine.WithCatalog(catalog))
	params := func(i int) map[string]any {
		return map[string]any{"symbol": fmt.Sprintf("SYM%d", i), "exchange": "NYSE"}
	}
	for _, mode := range []engine.BindingMode{engine.BindingOff, engine.BindingStrict} {
		b.Run("binding="+string(mode), func(b *testing.B) {
			mem := store.NewMemory(store.MemoryOptions{MaxEntries: 1 << 20, Retention: store.Retention{MaxRecords: 1 << 20}})
			d, err := engine.NewDriver(engine.DriverConfig{
				Generations: engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: p, Binding: mode}}, States: mem, Records: mem,
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			open := func(id string) {
				s, err := d.Open(ctx, id, engine.Opening{Text: "quotes"})
				if err != nil {
					b.Fatal(err)
				}
				steps := make([]engine.RoutingStep, 3)
				for i := range steps {
					steps[i] = engine.RoutingStep{StepID: fmt.Sprintf("step-%d", i+1), Namespace: "demo-tools", AgentName: "stock-service",
						Metadata: map[string]any{"capability": "stock_quote", "parameters": params(i)}}
				}
				if _, err := s.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p", Steps: steps}, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			id := ""
			for i := 0; b.Loop(); i++ {
				if i%3 == 0 {
					b.StopTimer()
					id = fmt.Sprintf("r%d", i)
					open(id)
					b.StartTimer()
				}
				res, err := d.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: id, StepID: fmt.Sprintf("step-%d", i%3+1),
					Namespace: "demo-tools", AgentName: "stock-service", Capability: "stock_quote", Parameters: params(i % 3)})
				if err != nil || !res.Allowed {
					b.Fatalf("check %d: %+v, %v", i, res, err)
				}
			}
		})
	}
}
