package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/engine/store/bolt"
	"github.com/agentd-dev/agentd/engine/store/storetest"
)

// BenchmarkCheck_Binding measures one allowed tool_call check in process on the memory
// store, with plan binding off and strict, alternately in one loop and in rotating
// order, so that all sides see the same moments of a shared machine. The difference
// (binding-ns/check) is binding's cost: finding the accepted step, comparing identity
// and parameters and writing the step's claim. Each side has one tool_call guard that
// allows everything; on the off and strict sides it reads only the call, as most
// compiled guards do, and on a third, strict, side it reads the accepted step too, which
// the check then builds for it (binding+step-ns/check). Each strict check binds a step
// no check has claimed yet: a new request with a 3-step plan is opened on each side
// (timer stopped) every 3 checks.
func BenchmarkCheck_Binding(b *testing.B) {
	benchBinding(b, func(b *testing.B) storetest.Stores {
		return store.NewMemory(store.MemoryOptions{MaxEntries: 1 << 20, Retention: store.Retention{MaxRecords: 1 << 20}})
	})
}

// BenchmarkCheck_BindingDurable is BenchmarkCheck_Binding on the durable store (bolt,
// its default durability mode), each side on a store of its own: binding's cost there
// is the claim's write, which goes into the commit of the check's record.
func BenchmarkCheck_BindingDurable(b *testing.B) {
	benchBinding(b, func(b *testing.B) storetest.Stores {
		s, err := bolt.Open(b.TempDir(), bolt.Options{MaxEntries: 1 << 20, Retention: store.Retention{MaxRecords: 1 << 20}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// benchBinding is BenchmarkCheck_Binding with each side's states and records on a
// store newStore makes.
func benchBinding(b *testing.B, newStore func(b *testing.B) storetest.Stores) {
	catalog, err := engine.NewCatalog([]engine.CatalogAgent{{Namespace: "demo-tools", Agent: "stock-service",
		Capabilities: []engine.Capability{{Name: "stock_quote"}}}})
	if err != nil {
		b.Fatal(err)
	}
	p := mustNew(b, []engine.Hook{&passRequired{passPlan{"allowed-operations"}}}, engine.WithCatalog(catalog))
	params := func(i int) map[string]any {
		return map[string]any{"symbol": fmt.Sprintf("SYM%d", i), "exchange": "NYSE"}
	}
	guard := func(readsStep bool) *op.Runner {
		runner, err := op.Compile(op.Set{PolicyRevision: "r", Guards: []op.Guard{{Name: "allow", Operations: []op.Operation{op.ToolCall},
			Check: func(_ context.Context, c op.Call) error {
				if readsStep && c.Step == nil {
					return op.Deny("no_step", "the guard got no step")
				}
				return nil
			}, ReadOnly: true, IgnoresStep: !readsStep}}})
		if err != nil {
			b.Fatal(err)
		}
		return runner
	}
	ctx := context.Background()
	modes := []engine.BindingMode{engine.BindingOff, engine.BindingStrict, engine.BindingStrict}
	drivers := make([]*engine.Driver, len(modes))
	for i, mode := range modes {
		st := newStore(b)
		if drivers[i], err = engine.NewDriver(engine.DriverConfig{
			Generations: engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: p, Binding: mode, Runner: guard(i == 2)}}, States: st, Records: st,
		}); err != nil {
			b.Fatal(err)
		}
	}
	open := func(d *engine.Driver, id string) {
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
	spent := make([]time.Duration, len(modes))
	id, n := "", 0
	for i := 0; b.Loop(); i++ {
		if i%3 == 0 {
			b.StopTimer()
			id = fmt.Sprintf("r%d", i)
			for _, d := range drivers {
				open(d, id)
			}
			b.StartTimer()
		}
		for k := range drivers {
			m := (k + i/3) % len(drivers) // who goes first rotates, request by request
			d := drivers[m]
			start := time.Now()
			res, err := d.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: id, StepID: fmt.Sprintf("step-%d", i%3+1),
				Namespace: "demo-tools", AgentName: "stock-service", Capability: "stock_quote", Parameters: params(i % 3)})
			spent[m] += time.Since(start)
			if err != nil || !res.Allowed {
				b.Fatalf("%s check %d: %+v, %v", modes[m], i, res, err)
			}
		}
		n++
	}
	per := func(m int) float64 { return float64(spent[m].Nanoseconds()) / float64(n) }
	b.ReportMetric(per(0), "off-ns/check")
	b.ReportMetric(per(1), "strict-ns/check")
	b.ReportMetric(per(2), "strict+step-ns/check")
	b.ReportMetric(per(1)-per(0), "binding-ns/check")
	b.ReportMetric(per(2)-per(0), "binding+step-ns/check")
}
