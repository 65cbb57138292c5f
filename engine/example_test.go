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

// maintenance is a before-planning hook in the legacy form: it returns a plain
// *ShortCircuit, or nil to let planning go on.
type maintenance struct{}

func (maintenance) Name() string { return "maintenance-window" }
func (maintenance) BeforePlanning(_ context.Context, pctx *engine.PipelineContext) (*engine.ShortCircuit, error) {
	if pctx.Metadata["region"] != "eu-west" {
		return nil, nil
	}
	return &engine.ShortCircuit{Response: "eu-west is under maintenance until 06:00 UTC", Source: "maintenance"}, nil
}

// ExampleBeforePlanningHook answers a request before planning with a hook in the legacy
// form. The engine accepts its short circuit as authoritative, even with cache reads
// disabled, and the request is complete: planning, tools and synthesis never run.
func ExampleBeforePlanningHook() {
	pipeline, err := engine.New([]engine.Hook{maintenance{}})
	if err != nil {
		panic(err)
	}
	mem := store.NewMemory(store.MemoryOptions{})
	driver, err := engine.NewDriver(engine.DriverConfig{
		Generations: engine.Fixed{Gen: &engine.Generation{ID: "g1", Pipeline: pipeline}},
		States:      mem, Records: mem,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, region := range []string{"us-east", "eu-west"} {
		sess, err := driver.Open(ctx, "req-"+region, engine.Opening{
			Text: "is my order shipped?", Metadata: map[string]any{"region": region}, CacheReadDisabled: true,
		})
		if err != nil {
			panic(err)
		}
		out, err := sess.BeforePlanning(ctx)
		if err != nil {
			panic(err)
		}
		if out.ShortCircuit == nil {
			fmt.Printf("%s: planning goes on\n", region)
			continue
		}
		rec, err := sess.Record(ctx)
		if err != nil {
			panic(err)
		}
		sc := out.ShortCircuit
		fmt.Printf("%s: %q from %s (%s, %s)\n", region, sc.ShortCircuit.Response, sc.Hook, sc.Kind, sc.Reason)
		fmt.Printf("record of %q: %s, %s, answered by %s\n", rec.Request, rec.Status, rec.Lifecycle, rec.FinalResponseSource)
	}
	// Output:
	// us-east: planning goes on
	// eu-west: "eu-west is under maintenance until 06:00 UTC" from maintenance-window (authoritative, authoritative)
	// record of "is my order shipped?": succeeded, completed, answered by before_planning_short_circuit
}
