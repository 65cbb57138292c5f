package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"sync"
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

// benchAgents is how many agents the benchmarks' allow-list adds, each allowed
// stock_quote in demo-tools: a plan whose steps are run by new agents is one no memo
// has seen.
const benchAgents = 64

// benchAgent is the agent of step j of iteration i of a benchmark reviewing unseen
// plans: the agents of the first three steps are i's base-64 digits, so that no two of
// the first 262,144 iterations review the same operations.
func benchAgent(i, j int) string { return benchAgentNames()[i>>(6*j)%benchAgents] }

var benchAgentNames = sync.OnceValue(func() (names [benchAgents]string) {
	for a := range names {
		names[a] = fmt.Sprintf("svc-%02d", a)
	}
	return names
})

// benchAllowList is allowListJSON with the benchmark agents.
var benchAllowList = sync.OnceValue(func() string {
	var list map[string]map[string]map[string]any
	if err := json.Unmarshal([]byte(allowListJSON), &list); err != nil {
		panic(err)
	}
	for a := range benchAgents {
		list["allowlist"]["demo-tools"][benchAgent(a, 0)] = []any{"stock_quote"}
	}
	raw, err := json.Marshal(list)
	if err != nil {
		panic(err)
	}
	return string(raw)
})

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
		"data/agentd/allowlist.json": benchAllowList(),
	}
	maps.Copy(files, repoPolicies())
	return files
}

// BenchmarkRequiredRego_Compiled reviews an unseen plan every iteration (new plan_id,
// instructions and step ids, and operations run by new agents), so the memo never
// answers; compare with BenchmarkRequiredRego_RawOPA.
func BenchmarkRequiredRego_Compiled(b *testing.B) { benchRequiredRego(b, unseenPlan) }

// BenchmarkRequiredRego_KnownShape reviews a new plan of a known shape every iteration
// (new plan_id and instructions, which the stock policy does not read): memo hits.
func BenchmarkRequiredRego_KnownShape(b *testing.B) { benchRequiredRego(b, knownShape) }

// BenchmarkRequiredRego_NewStepIDs reviews a plan with new step ids over known, allowed
// operations every iteration, as an orchestrator names the steps of each new plan: the
// stock policy reads step ids only to name denied steps, so allowed decisions are
// memo hits.
func BenchmarkRequiredRego_NewStepIDs(b *testing.B) { benchRequiredRego(b, newStepIDs) }

// planVariation is what changes between the plans a benchmark reviews.
type planVariation int

const (
	knownShape planVariation = iota // plan id and instructions
	newStepIDs                      // and step ids
	unseenPlan                      // and the agents running the steps
)

func benchRequiredRego(b *testing.B, v planVariation) {
	gen := load(b, benchRegoConfig())
	ctx := requestCtx(gen, "req-bench", noGate)
	pctx := &engine.PipelineContext{Request: benchRequest, Metadata: benchMetadata(), Enrichments: map[string]any{}}
	plan := quotePlan(3)
	// A known shape's plan ids, which its key does not read, are made before the loop,
	// so that the loop measures the review and not their formatting. New step ids are
	// made of the plan id: those are new every iteration.
	ids := make([]string, 1<<12)
	for i := range ids {
		ids[i] = "plan-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if v == knownShape {
			plan.PlanID = ids[i%len(ids)]
		} else {
			plan.PlanID = "plan-" + strconv.Itoa(i)
		}
		for j := range plan.Steps {
			plan.Steps[j].Instruction = plan.PlanID
			if v == unseenPlan {
				plan.Steps[j].AgentName = benchAgent(i, j)
			}
			if v != knownShape {
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
	if err := json.Unmarshal([]byte(benchAllowList()), &data); err != nil {
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
			step["agent_name"] = benchAgent(i, j)
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
