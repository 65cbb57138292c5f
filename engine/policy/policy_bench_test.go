package policy

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/wiretest"
	"github.com/agentd-dev/agentd/engine/policy/internal/regovalue"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// BenchmarkQuery_PlanDecision3Steps measures one after-planning decision through this
// package: PlanInput, evaluation and decoding of the typed decision. The deadline is
// generous so that a loaded machine measures slowly instead of failing closed.
func BenchmarkQuery_PlanDecision3Steps(b *testing.B) {
	q := mustPrepare(b, libraryBundle(b, Options{Timeout: 10 * time.Second}), "data.agentd.plan")
	p := threeStepPlan()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		in, err := PlanInput(p, 1, p.OriginalRequest, map[string]any{"tenant": "acme"}, map[string]any{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		d, err := q.PlanDecision(ctx, in)
		if err != nil || len(d.Deny) != 1 {
			b.Fatalf("PlanDecision = %+v, %v", d, err)
		}
	}
}

// BenchmarkRawOPA_3Steps is the peer baseline: the same library, data and plan through
// rego.New(...).PrepareForEval and Eval with a map input, as an OPA user writes it.
func BenchmarkRawOPA_3Steps(b *testing.B) {
	opts := []func(*rego.Rego){
		rego.Query("data.agentd.plan"),
		rego.Store(inmem.NewFromObject(map[string]any{"agentd": map[string]any{"allowlist": map[string]any{
			"demo-tools": map[string]any{"stock-service": []any{"stock_quote"}},
		}}})),
	}
	for _, m := range libraryModules(b, false) {
		opts = append(opts, rego.Module(m.File, string(m.Source)))
	}
	ctx := context.Background()
	pq, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		b.Fatal(err)
	}
	p := threeStepPlan()
	input := jsonMap(b, map[string]any{
		"plan": p, "phase": 1, "request": p.OriginalRequest,
		"metadata": map[string]any{"tenant": "acme"}, "enrichments": map[string]any{},
	})
	b.ReportAllocs()
	for b.Loop() {
		rs, err := pq.Eval(ctx, rego.EvalInput(input))
		if err != nil || len(rs) != 1 {
			b.Fatalf("Eval = %v, %v", rs, err)
		}
		doc := rs[0].Expressions[0].Value.(map[string]any)
		if len(doc["deny"].([]any)) != 1 {
			b.Fatalf("deny = %v", doc["deny"])
		}
	}
}

// BenchmarkPlanInput builds the three-step plan input directly as Rego values.
func BenchmarkPlanInput(b *testing.B) {
	p := threeStepPlan()
	md := map[string]any{"tenant": "acme"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PlanInput(p, 1, p.OriginalRequest, md, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInputValueJSON builds the same input through a JSON round trip.
func BenchmarkInputValueJSON(b *testing.B) {
	p := threeStepPlan()
	md := map[string]any{"tenant": "acme"}
	b.ReportAllocs()
	for b.Loop() {
		raw, err := json.Marshal(map[string]any{"plan": p, "phase": 1, "request": p.OriginalRequest, "metadata": md, "enrichments": nil})
		if err != nil {
			b.Fatal(err)
		}
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			b.Fatal(err)
		}
		if _, err := regovalue.Of(x); err != nil {
			b.Fatal(err)
		}
	}
}

// jsonMap returns v as the map encoding/json decodes it to.
func jsonMap(b *testing.B, v any) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		b.Fatal(err)
	}
	return m
}

// threeStepPlan quotes, trades and quotes again; the library denies the trade.
func threeStepPlan() *engine.RoutingPlan {
	return wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote"), wiretest.StockStep("step-2", "execute_trade", "step-1"), wiretest.StockStep("step-3", "stock_quote"))
}
