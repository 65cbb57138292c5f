package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/wiretest"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/policy/internal/regovalue"
	"github.com/open-policy-agent/opa/v1/ast"
)

// viaJSON is the reference conversion: encoding/json, then InputValue.
func viaJSON(t *testing.T, v any) ast.Value {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		t.Fatal(err)
	}
	out, err := regovalue.Of(x)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPlanInputMatchesJSON(t *testing.T) {
	no := false
	full := wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote"), wiretest.StockStep("step-2", "execute_trade", "step-1"))
	full.Terminal = &no
	full.ContinuationNote = "then summarise"
	full.Mode = engine.ModeWorkflow
	full.CreatedAt = time.Date(2025, 3, 1, 12, 30, 0, 5, time.FixedZone("X", 5*3600+1800))
	full.NeedsUserInput = &engine.NeedsUserInput{Question: "Which account?", MissingFields: []string{"account"}}
	full.Steps[0].ImplicitDeps = []string{"ctx"}
	full.Steps[1].Metadata["parameters"] = map[string]any{
		"amount": 10.5, "limit": int64(1 << 40), "tags": []any{"a", nil, true, json.Number("1e3")},
		"nested": map[string]any{"deep": []string{"x"}}, "typed": map[string]string{"k": "v"},
		"nils": []any{[]any(nil), map[string]any(nil), []string(nil), map[string]string(nil)},
	}

	plans := map[string]*engine.RoutingPlan{
		"nil":         nil,
		"zero":        {},
		"empty_steps": {PlanID: "p", Steps: []engine.RoutingStep{}},
		"bare_step":   {Steps: []engine.RoutingStep{{StepID: "s", DependsOn: []string{}, Metadata: map[string]any{}}}},
		"typical":     wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote")),
		"full":        full,
	}
	envs := []struct {
		metadata, enrichments map[string]any
	}{
		{nil, nil},
		{map[string]any{}, map[string]any{}},
		{map[string]any{"tenant": "acme", "turns": []any{map[string]any{"role": "user"}}}, map[string]any{"rag_context": "x"}},
	}
	for name, p := range plans {
		for _, env := range envs {
			got, err := PlanInput(p, 2, "req", env.metadata, env.enrichments, nil)
			if err != nil {
				t.Fatalf("%s: PlanInput: %v", name, err)
			}
			want := viaJSON(t, map[string]any{
				"plan": p, "phase": 2, "request": "req", "metadata": env.metadata, "enrichments": env.enrichments,
				"labels": []any{}, "history": []any{},
			})
			if got.Compare(want) != 0 {
				t.Errorf("%s: PlanInput =\n %v\nJSON round trip =\n %v", name, got, want)
			}
		}
	}
}

func TestCallInputMatchesJSON(t *testing.T) {
	call := &op.Call{
		Operation: op.ToolCall, RequestID: "req-1", Capability: "execute_trade",
		Parameters: map[string]any{"amount": 12000, "symbol": "AAPL"}, Metadata: map[string]any{},
	}
	for _, md := range []map[string]any{nil, {"tenant": "acme"}} {
		got, err := CallInput(call, "buy", md, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := viaJSON(t, map[string]any{"call": withLabels(t, call), "request": "buy", "metadata": md, "enrichments": nil, "labels": []any{}, "history": []any{}})
		if got.Compare(want) != 0 {
			t.Errorf("CallInput = %v, want %v", got, want)
		}
	}
}

func TestInputErrors(t *testing.T) {
	p := wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote"))
	p.Steps[0].Metadata["parameters"] = map[string]any{"amount": math.NaN()}
	if _, err := PlanInput(p, 1, "", nil, nil, nil); err == nil {
		t.Error("PlanInput accepted a NaN parameter")
	}
	p = wiretest.StockPlan()
	p.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := PlanInput(p, 1, "", nil, nil, nil); err == nil {
		t.Error("PlanInput accepted a year JSON cannot encode")
	}
	p.CreatedAt = time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*60*60))
	if _, err := PlanInput(p, 1, "", nil, nil, nil); err == nil {
		t.Error("PlanInput accepted a zone offset JSON cannot encode")
	}
	if _, err := CallInput(&op.Call{Parameters: map[string]any{"x": math.Inf(1)}}, "", nil, nil); err == nil {
		t.Error("CallInput accepted an infinite number")
	}
	if _, err := regovalue.Of([]any{func() {}}); err == nil {
		t.Error("InputValue accepted a func")
	}
}

func TestInputValueStructs(t *testing.T) {
	p := wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote"))
	got, err := regovalue.Of(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := viaJSON(t, p); got.Compare(want) != 0 {
		t.Errorf("regovalue.Of(struct) = %v, want %v", got, want)
	}
}

// TestInput_AgreesWithJSON: the Rego inputs of generated plans and calls, with nil,
// empty and filled metadata and enrichments, are the Rego values of their
// encoding/json form.
func TestInput_AgreesWithJSON(t *testing.T) {
	r := wiretest.Rand(4)
	for range 1000 {
		p, call := wiretest.Plan(r), wiretest.Call(r)
		md, en := wiretest.Object(r, 2), wiretest.Object(r, 2)
		got, err := PlanInput(p, 2, "req", md, en, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := viaJSON(t, map[string]any{"plan": p, "phase": 2, "request": "req", "metadata": md, "enrichments": en, "labels": []any{}, "history": []any{}})
		if got.Compare(want) != 0 {
			t.Fatalf("PlanInput =\n %v\nJSON =\n %v", got, want)
		}
		got, err = CallInput(call, call.Request, call.Metadata, en)
		if err != nil {
			t.Fatal(err)
		}
		want = viaJSON(t, map[string]any{"call": withLabels(t, call), "request": call.Request, "metadata": call.Metadata, "enrichments": en, "labels": []any{}, "history": []any{}})
		if got.Compare(want) != 0 {
			t.Fatalf("CallInput =\n %v\nJSON =\n %v", got, want)
		}
	}
}

// withLabels is call's JSON form with its labels as input.call.labels.
func withLabels(t *testing.T, call *op.Call) map[string]any {
	t.Helper()
	b, err := json.Marshal(call)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	labels := make([]any, len(call.Labels))
	for i, l := range call.Labels {
		labels[i] = l
	}
	m["labels"] = labels
	return m
}
