package engine_test

import (
	"context"
	"fmt"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// allowList is a required after-planning hook: every step's capability must be listed.
type allowList map[string]bool

func (allowList) Name() string                 { return "allowed-operations" }
func (allowList) RequireAfterPlanningSuccess() {}
func (a allowList) AfterPlanning(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
	for _, s := range plan.Steps {
		if !a[s.Capability()] {
			return nil, fmt.Errorf("step %s: %s is not allowed", s.StepID, s.Capability())
		}
	}
	return plan, nil
}

type planner struct{ capability string }

func (p planner) Plan(context.Context, *engine.PipelineContext, []engine.PhaseRecord) (*engine.RoutingPlan, error) {
	return &engine.RoutingPlan{PlanID: "p1", Steps: []engine.RoutingStep{{
		StepID: "step-1", Namespace: "demo-tools", AgentName: "stock-service",
		Metadata: map[string]any{"capability": p.capability},
	}}}, nil
}

type tools struct{}

func (tools) Execute(context.Context, engine.RoutingStep, []engine.StepResult) (any, error) {
	return map[string]any{"price": 182.5}, nil
}

type model struct{}

func (model) Synthesize(_ context.Context, _ *engine.PipelineContext, r *engine.ExecutionResult) (string, error) {
	return fmt.Sprintf("%d step(s) ran", len(r.Steps)), nil
}

// Example embeds the engine: a pipeline with a required allow-list hook, driven through
// a whole request by the lifecycle, once with an allowed plan and once with a plan the
// allow-list rejects (no tool runs).
func Example() {
	catalog, _ := engine.NewCatalog([]engine.CatalogAgent{{
		Namespace: "demo-tools", Agent: "stock-service",
		Capabilities: []engine.Capability{{Name: "stock_quote"}, {Name: "execute_trade"}},
	}})
	pipeline, err := engine.New([]engine.Hook{allowList{"stock_quote": true}}, engine.WithCatalog(catalog))
	if err != nil {
		panic(err) // nil entries and broken required hooks are construction errors
	}
	mem := store.NewMemory(store.MemoryOptions{}) // request states and records
	driver, err := engine.NewDriver(engine.DriverConfig{
		Generations: engine.Fixed{Gen: &engine.Generation{ID: "g1", Pipeline: pipeline}},
		States:      mem, Records: mem,
	})
	if err != nil {
		panic(err)
	}
	for _, capability := range []string{"stock_quote", "execute_trade"} {
		lc := &engine.Lifecycle{Driver: driver, Planner: planner{capability}, Executor: tools{}, Synthesizer: model{}}
		out, err := lc.Run(context.Background(), engine.Request{ID: "req-" + capability, Text: "ACME?"})
		if rejected, ok := engine.AsRequiredAfterPlanningError(err); ok {
			fmt.Printf("%s: rejected by %s, record %s\n", capability, rejected.Hook, out.Record.Status)
			continue
		}
		fmt.Printf("%s: %q, record %s\n", capability, out.Response.Response, out.Record.Status)
	}
	// Output:
	// stock_quote: "1 step(s) ran", record succeeded
	// execute_trade: rejected by allowed-operations, record failed
}
