package inproc

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// PlanCase is one plan review: a plan of Steps steps against an allow-list of Size.
type PlanCase struct {
	Steps int
	Size  fixture.Size
}

func (c PlanCase) String() string {
	return fmt.Sprintf("%d-step plan, %d-entry allow-list", c.Steps, c.Size.Entries())
}

// AgentdPlanReview is agentd's side: a generation loaded by config.Load from dir (written
// here: the required `rego: {query: data.agentd.plan}` hook over policies and the
// generated allow-list), its Pipeline.AfterPlanning called with a nil trail, as the
// daemon calls it minus the HTTP, state and record layers. Each operation varies the
// plan as v says.
func AgentdPlanReview(dir string, policies []fixture.File, c PlanCase, v fixture.Variation) (Side, error) {
	if err := fixture.AgentdConfig(dir, policies, c.Size); err != nil {
		return Side{}, err
	}
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		return Side{}, fmt.Errorf("config.Load: %w", err)
	}
	ctx := engine.WithRequestInfo(context.Background(), engine.RequestInfo{
		ID: "req-bench", Generation: gen.ID, Gate: engine.NewGate(nil, false),
	})
	pctx := &engine.PipelineContext{Request: fixture.Request, Metadata: fixture.Metadata(), Enrichments: map[string]any{}}
	plan := fixture.Plan(c.Steps, c.Size)
	if err := engine.ValidatePlan(plan, gen.Catalog, nil); err != nil {
		return Side{}, err
	}
	seq := 0
	return Side{Name: "agentd " + c.String() + ", " + v.String(), Op: func() error {
		seq++
		v.Vary(plan, seq)
		got, err := gen.Pipeline.AfterPlanning(ctx, pctx, plan, nil, nil)
		if err != nil {
			return err
		}
		if len(got.Steps) != c.Steps {
			return fmt.Errorf("accepted plan has %d steps, want %d", len(got.Steps), c.Steps)
		}
		return nil
	}}, nil
}

// OPAPlanReview is raw OPA's side: rego.New with the same query, modules and data
// (inmem.NewFromObject), prepared once; each operation is one Eval with
// rego.EvalInput of the same input map the agentd side builds from the plan, varied
// per operation as v says.
func OPAPlanReview(policies []fixture.File, c PlanCase, v fixture.Variation) (Side, error) {
	opts := []func(*rego.Rego){rego.Query(fixture.Query)}
	for _, f := range policies {
		opts = append(opts, rego.Module(f.Name, string(f.Data)))
	}
	data := map[string]any{"agentd": map[string]any{"allowlist": fixture.AllowList(c.Size)}}
	opts = append(opts, rego.Store(inmem.NewFromObject(data)))
	ctx := context.Background()
	prepared, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return Side{}, err
	}
	input, err := fixture.Input(fixture.Plan(c.Steps, c.Size))
	if err != nil {
		return Side{}, err
	}
	plan := input["plan"].(map[string]any)
	seq := 0
	return Side{Name: "raw OPA " + c.String() + ", " + v.String(), Op: func() error {
		seq++
		v.VaryInput(plan, seq)
		rs, err := prepared.Eval(ctx, rego.EvalInput(input))
		if err != nil {
			return err
		}
		return checkAllowed(rs)
	}}, nil
}

// checkAllowed checks that a data.agentd.plan result allows the plan.
func checkAllowed(rs rego.ResultSet) error {
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return fmt.Errorf("decision is undefined: %v", rs)
	}
	doc, _ := rs[0].Expressions[0].Value.(map[string]any)
	deny, ok := doc["deny"].([]any)
	if !ok || len(deny) != 0 || doc["allow"] != true {
		return fmt.Errorf("plan not allowed: %v", doc)
	}
	return nil
}
