package expr

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"

	"github.com/agentd-dev/agentd/engine/op"
)

// fitExprs use every kind of input the cost depends on: strings of the request and of
// metadata and enrichment values, map sizes, comprehensions over metadata lists and
// maps, concatenations and conversions, as before_planning rules do.
var fitExprs = []string{
	`request.lowerAscii().trim().contains('quote')`,
	`request.contains('?') || request.lowerAscii().startsWith('quote')`,
	`has(metadata.tenant) && string(metadata.tenant).startsWith('t-')`,
	`('Tenant: ' + string(metadata.tenant) + ' / ' + request).size() > 3`,
	`size(metadata) > 2 && metadata.exists(k, k.contains('x'))`,
	`has(metadata.items) && metadata.items.exists(x, string(x).contains('7'))`,
	`has(metadata.items) && metadata.items.map(x, string(x) + request).exists(s, s.endsWith('!'))`,
	`has(enrichments.rag_context) && string(enrichments.rag_context).split(' ').size() > 3`,
	`has(metadata.nested) && metadata.nested.all(k, string(metadata.nested[k]).matches('^[a-z]+$'))`,
	`request.replace('a', 'aa').size() > size(request)`,
}

// fittingVars draws inputs within the estimate's sizes, large ones included.
func fittingVars(r *rand.Rand) *Vars {
	str := func(max int) string { return strings.Repeat(string(rune('a'+r.IntN(26))), r.IntN(max+1)) }
	md := map[string]any{"tenant": "t-" + str(MaxCollectionSize-2)}
	if r.IntN(2) == 0 {
		items := make([]any, r.IntN(MaxCollectionSize+1))
		for i := range items {
			items[i] = str(MaxCollectionSize)
		}
		md["items"] = items
	}
	if r.IntN(2) == 0 {
		nested := map[string]any{}
		for i := range r.IntN(50) {
			nested[fmt.Sprint("k", i)] = str(MaxCollectionSize)
		}
		md["nested"] = nested
	}
	for i := range r.IntN(20) {
		md[fmt.Sprint("x", i)] = float64(i)
	}
	return &Vars{Request: str(MaxStringSize), Metadata: md, Enrichments: map[string]any{"rag_context": str(MaxCollectionSize)}}
}

// fitGuards are guard rules over the call: its identity, parameters (selected, iterated,
// concatenated) and the accepted step.
var fitGuards = []string{
	`call.capability == 'stock_quote' && has(call.parameters.symbol) && string(call.parameters.symbol).startsWith('A')`,
	`call.parameters.exists(k, string(call.parameters[k]).contains('x'))`,
	`has(call.step) && call.step.namespace == call.namespace && call.step.parameters.all(k, k in call.parameters)`,
	`size(call.parameters) < 20 || (string(call.parameters.note) + call.agent_name).size() > 3`,
}

// fittingCall draws a call within the estimate's sizes, with its accepted step.
func fittingCall(r *rand.Rand) *op.Call {
	str := func(max int) string { return strings.Repeat(string(rune('a'+r.IntN(26))), r.IntN(max+1)) }
	params := map[string]any{"symbol": "A" + str(MaxCollectionSize-1), "note": str(MaxCollectionSize)}
	for i := range r.IntN(30) {
		params[fmt.Sprint("p", i)] = str(MaxCollectionSize)
	}
	return &op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "s", Namespace: "ns", AgentName: "agent", Capability: "stock_quote",
		Parameters: params, Step: map[string]any{"namespace": "ns", "parameters": map[string]any{"symbol": "A"}}}
}

// An evaluation whose inputs fit the estimate's sizes runs untracked (fits): its actual
// cost, measured by the tracked program on the same inputs, never exceeds the estimate
// Compile held within the limit, and both programs give the same result.
func TestFits_EstimateBoundsTheCostOfFittingInputs(t *testing.T) {
	c := newCompiler(t, 1<<40)
	r := rand.New(rand.NewPCG(4, 2))
	for _, src := range fitExprs {
		estimateBounds(t, c, BeforePlanning, src, func() *Vars { return fittingVars(r) })
	}
	for _, src := range fitGuards {
		estimateBounds(t, c, Guard, src, func() *Vars { v := fittingVars(r); v.Call = fittingCall(r); return v })
	}
}

// estimateBounds checks src in scope on 30 inputs drawn by draw.
func estimateBounds(t *testing.T, c *Compiler, scope Scope, src string, draw func() *Vars) {
	t.Helper()
	p := mustCompile(t, c, scope, src, Bool)
	if p.tracked == nil {
		t.Fatalf("%s: no tracked program, although its cost depends on input sizes", src)
	}
	checked, iss := c.envs[scope].Compile(src)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	est, err := c.envs[scope].EstimateCost(checked, sizeEstimator{})
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		vars := draw()
		if !p.fits(vars) {
			t.Fatalf("%s: inputs drawn within the estimate's sizes do not fit", src)
		}
		got, _, gotErr := p.prg.Eval(vars)
		vars.iterations = 0
		want, details, wantErr := p.tracked.Eval(vars)
		if (gotErr == nil) != (wantErr == nil) || gotErr == nil && got.Equal(want) != types.True {
			t.Fatalf("%s: untracked %v (%v), tracked %v (%v)", src, got, gotErr, want, wantErr)
		}
		if cost := details.ActualCost(); cost == nil || *cost > est.Max {
			t.Fatalf("%s: actual cost %v over the estimate %d", src, cost, est.Max)
		}
	}
}

// Inputs beyond the estimate's sizes run tracked: the runtime limit stops them.
func TestFits_LargerInputsAreTracked(t *testing.T) {
	c := newCompiler(t, 7_000)
	p := mustCompile(t, c, BeforePlanning, `has(metadata.notes) && string(metadata.notes).contains('needle')`, Bool)
	for _, tc := range []struct {
		notes string
		fits  bool
	}{
		{strings.Repeat("hay ", 250), true},
		{strings.Repeat("hay ", 250) + "x", false},
		{strings.Repeat("hay ", 100_000), false},
	} {
		vars := &Vars{Metadata: map[string]any{"notes": tc.notes}}
		if got := p.fits(vars); got != tc.fits {
			t.Errorf("notes of %d bytes: fits = %v, want %v", len(tc.notes), got, tc.fits)
		}
	}
	_, err := p.Eval(context.Background(), &Vars{Metadata: map[string]any{"notes": strings.Repeat("hay ", 100_000)}})
	wantEvalKind(t, err, EvalCostLimit)
	for name, vars := range map[string]*Vars{
		"a long request":   {Request: strings.Repeat("a", MaxStringSize+1)},
		"a long list":      {Metadata: map[string]any{"l": make([]any, MaxCollectionSize+1)}},
		"a long key":       {Enrichments: map[string]any{strings.Repeat("k", MaxCollectionSize+1): 1.0}},
		"a typed slice":    {Metadata: map[string]any{"l": []string{"a"}}},
		"too deep":         {Metadata: deep(maxFitDepth + 2)},
		"too many members": {Metadata: wide(MaxCollectionSize + 1)},
	} {
		p := mustCompile(t, c, BeforePlanning, `request.size() + size(metadata) + size(enrichments) > 0`, Bool)
		if p.fits(vars) {
			t.Errorf("%s fits", name)
		}
	}
	guard := mustCompile(t, newCompiler(t, 1<<40), Guard, `call.parameters.exists(k, string(call.parameters[k]).contains('x'))`, Bool)
	for name, params := range map[string]map[string]any{
		"a long parameter":    {"note": strings.Repeat("x", MaxCollectionSize+1)},
		"too many parameters": wide(MaxCollectionSize + 1),
	} {
		if guard.fits(&Vars{Call: &op.Call{Operation: op.ToolCall, Parameters: params}}) {
			t.Errorf("a call with %s fits", name)
		}
	}
	if mustCompile(t, c, AfterPlanning, `size(plan.steps) > 0 && request.contains('x')`, Bool).fits(&Vars{}) {
		t.Error("an expression that uses the plan fits")
	}
	// Of a map only selected by member, only those members count.
	members := mustCompile(t, c, BeforePlanning, `has(metadata.tenant) && string(metadata.tenant).contains('x')`, Bool)
	big := wide(MaxCollectionSize + 1)
	big["other"] = strings.Repeat("x", MaxCollectionSize+1)
	if big["tenant"] = "t"; !members.fits(&Vars{Metadata: big}) {
		t.Error("a selected member fits, the map's other members do not count, yet the evaluation does not fit")
	}
	if big["tenant"] = strings.Repeat("x", MaxCollectionSize+1); members.fits(&Vars{Metadata: big}) {
		t.Error("a selected member too long fits")
	}
}

func deep(n int) map[string]any {
	m := map[string]any{}
	for range n {
		m = map[string]any{"d": m}
	}
	return m
}

func wide(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[fmt.Sprint(i)] = 1.0
	}
	return m
}
