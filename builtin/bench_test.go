package builtin_test

import (
	"context"
	"encoding/json"
	"maps"
	"strconv"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/agentd-dev/agentd/engine"
)

// The benchmarks come in pairs run in one process: _Compiled drives a decl-loaded
// pipeline stage with recording off, _Raw does the same evaluation with the plain
// library, so compiled/raw is the price of the engine around the expression or policy.
// The Rego pair gives every iteration a new plan (its own plan_id and step
// instructions), so no decision memo can answer from an earlier iteration: both sides
// evaluate the policy every time.

const (
	benchWhen  = `has(metadata.tenant)`
	benchValue = `'Tenant: ' + string(metadata.tenant)`
)

var benchRequest = "price of ACME?"

func benchMetadata() map[string]any { return map[string]any{"tenant": "acme", "user": "u-1"} }

func BenchmarkEnrichWithWhen_Compiled(b *testing.B) {
	gen := loadHooks(b, hooks(`hooks:
  - name: tenant-context
    stage: before_planning
    when: "`+benchWhen+`"
    steps:
      - enrich: {key: rag_context, value: "`+benchValue+`"}
`))
	ctx := requestCtx(gen, "req-bench", noGate)
	md := benchMetadata()
	b.ReportAllocs()
	for b.Loop() {
		pctx := &engine.PipelineContext{Request: benchRequest, Metadata: md}
		out, err := gen.Pipeline.BeforePlanning(ctx, pctx, noGate, nil)
		if out != nil || err != nil || pctx.Enrichments["rag_context"] != "Tenant: acme" {
			b.Fatalf("BeforePlanning = %v, %v, %v", out, err, pctx.Enrichments)
		}
	}
}

// BenchmarkEnrichWithWhen_RawCEL is the baseline: the same expressions evaluated with
// plain cel-go, without (plain) and with (cost_limit) the runtime cost limit agentd
// must apply to expressions whose cost depends on input sizes.
func BenchmarkEnrichWithWhen_RawCEL(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchRawCEL(b) })
	b.Run("cost_limit", func(b *testing.B) { benchRawCEL(b, cel.CostLimit(1_000_000)) })
}

func benchRawCEL(b *testing.B, opts ...cel.ProgramOption) {
	object := cel.MapType(cel.StringType, cel.DynType)
	env, err := cel.NewEnv(
		cel.Variable("request", cel.StringType),
		cel.Variable("metadata", object),
		cel.Variable("enrichments", object),
		cel.Variable("now", cel.TimestampType),
	)
	if err != nil {
		b.Fatal(err)
	}
	compile := func(src string) cel.Program {
		ast, iss := env.Compile(src)
		if iss.Err() != nil {
			b.Fatal(iss.Err())
		}
		prg, err := env.Program(ast, opts...)
		if err != nil {
			b.Fatal(err)
		}
		return prg
	}
	when, value := compile(benchWhen), compile(benchValue)
	md := benchMetadata()
	b.ReportAllocs()
	for b.Loop() {
		enrichments := map[string]any{}
		vars := map[string]any{"request": benchRequest, "metadata": md, "enrichments": enrichments}
		ok, _, err := when.Eval(vars)
		if err != nil {
			b.Fatal(err)
		}
		if ok == types.True {
			v, _, err := value.Eval(vars)
			if err != nil {
				b.Fatal(err)
			}
			enrichments["rag_context"] = v.Value()
		}
		if enrichments["rag_context"] != "Tenant: acme" {
			b.Fatalf("enrichments = %v", enrichments)
		}
	}
}

// benchRegoConfig is the required allow-list hook over the repository's policies.
func benchRegoConfig() map[string]string {
	files := map[string]string{
		"hooks/plan.yaml": hooks(slackRegoTimeout, `hooks:
  - name: allowed-operations
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.agentd.plan}
`),
		"data/agentd/allowlist.json": allowListJSON,
	}
	maps.Copy(files, repoPolicies())
	return files
}

// BenchmarkRequiredRego_Compiled reviews an unseen plan every iteration (new plan_id,
// instructions and step ids, which the stock policy reads), so the memo never answers;
// compare with BenchmarkRequiredRego_RawOPA.
func BenchmarkRequiredRego_Compiled(b *testing.B) { benchRequiredRego(b, true) }

// BenchmarkRequiredRego_KnownShape reviews a new plan of a known shape every iteration
// (new plan_id and instructions, which the stock policy does not read): memo hits.
func BenchmarkRequiredRego_KnownShape(b *testing.B) { benchRequiredRego(b, false) }

func benchRequiredRego(b *testing.B, newStepIDs bool) {
	gen := load(b, benchRegoConfig())
	ctx := requestCtx(gen, "req-bench", noGate)
	pctx := &engine.PipelineContext{Request: benchRequest, Metadata: benchMetadata(), Enrichments: map[string]any{}}
	plan := quotePlan(3)
	// A known shape's plan ids, which its key does not read, are made before the loop,
	// so that the loop measures the review and not their formatting. An unseen plan's
	// step ids are made of its plan id: those are new every iteration.
	ids := make([]string, 1<<12)
	for i := range ids {
		ids[i] = "plan-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if newStepIDs {
			plan.PlanID = "plan-" + strconv.Itoa(i)
		} else {
			plan.PlanID = ids[i%len(ids)]
		}
		for j := range plan.Steps {
			plan.Steps[j].Instruction = plan.PlanID
			if newStepIDs {
				plan.Steps[j].StepID = plan.PlanID + "-" + strconv.Itoa(j)
				if j > 0 {
					plan.Steps[j].DependsOn = []string{plan.Steps[j-1].StepID}
				}
			}
		}
		got, err := gen.Pipeline.AfterPlanning(ctx, pctx, plan, nil, nil)
		if err != nil || len(got.Steps) != 3 {
			b.Fatalf("AfterPlanning = %v, %v", got, err)
		}
	}
}

func BenchmarkRequiredRego_RawOPA(b *testing.B) {
	opts := []func(*rego.Rego){rego.Query("data.agentd.plan")}
	for name, src := range repoPolicies() {
		opts = append(opts, rego.Module(name, src))
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(allowListJSON), &data); err != nil {
		b.Fatal(err)
	}
	opts = append(opts, rego.Store(inmem.NewFromObject(map[string]any{"agentd": data})))
	ctx := context.Background()
	prepared, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// The same input as the action's, as JSON-shaped Go values.
	planJSON, err := json.Marshal(quotePlan(3))
	if err != nil {
		b.Fatal(err)
	}
	var planMap map[string]any
	if err := json.Unmarshal(planJSON, &planMap); err != nil {
		b.Fatal(err)
	}
	input := map[string]any{
		"plan": planMap, "phase": 1, "request": benchRequest,
		"metadata": benchMetadata(), "enrichments": map[string]any{},
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := "plan-" + strconv.Itoa(i)
		planMap["plan_id"] = id
		for j, step := range planMap["steps"].([]any) {
			step := step.(map[string]any)
			step["instruction"] = id
			step["step_id"] = id + "-" + strconv.Itoa(j)
			if j > 0 {
				step["depends_on"] = []any{id + "-" + strconv.Itoa(j-1)}
			}
		}
		rs, err := prepared.Eval(ctx, rego.EvalInput(input))
		if err != nil {
			b.Fatal(err)
		}
		doc, _ := rs[0].Expressions[0].Value.(map[string]any)
		if deny, _ := doc["deny"].([]any); len(rs) != 1 || doc == nil || len(deny) != 0 {
			b.Fatalf("decision = %v", rs)
		}
	}
}
