package expr

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine/diag"
)

var (
	compileKinds = []diag.Kind{diag.KindCELSyntax, diag.KindCELTypeCheck, diag.KindCELUndeclaredVariable, diag.KindCELCostLimit}
	evalKinds    = []EvalKind{EvalCostLimit, EvalInterrupted, EvalFailed}
)

// FuzzCompile compiles arbitrary source in every scope and for every output kind, and
// evaluates whatever compiles. Nothing may panic; every compile failure is a *diag.Error
// with a CEL kind and a position inside the source, every evaluation failure an
// *EvalError with a known kind.
func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		"has(metadata.tenant)", "request.lowerAscii().trim() == 'x'", "size(plan.steps) > 0",
		"plan.steps.exists(s, s.metadata.capability == 'execute_trade')", "step.metadata.capability == 'x'",
		"call.capability == 'execute_trade' && double(call.parameters.amount) > 10000.0",
		"result.steps.filter(s, !s.success).map(s, s.step_id)", "response + '!'", "now > timestamp('2020-01-01T00:00:00Z')",
		"sets.contains([1, 2], [2]) && math.greatest(1, 2) == 2", "base64.encode(b'x')", "lists.range(10).map(i, i * i)",
		"request == 'a' &&\n  (metadata.x ||\n   )", "", "(((", "'\\u00", "1 / 0", "{1: 'a'}", "[1].exists(plan, plan == 1)",
		"metadata.items.all(x, metadata.items.all(y, x == y))",
	} {
		f.Add(seed)
	}
	c := newCompiler(f, 0)
	vars := &Vars{
		Request: "Buy 10 ACME", Metadata: map[string]any{"tenant": "acme", "items": []any{1, 2, 3}},
		Plan: samplePlan(), Step: &samplePlan().Steps[0], Result: sampleResult(), Response: "ok", Call: sampleCall(12000.0),
	}
	f.Fuzz(func(t *testing.T, src string) {
		lines := strings.Count(src, "\n") + 1
		for _, scope := range scopes() {
			for _, want := range []Kind{Bool, String, Any} {
				p, err := c.Compile(scope, src, want)
				if err != nil {
					checkCompileError(t, err, lines)
					continue
				}
				vars.Reset()
				if _, err := p.Eval(context.Background(), vars); err != nil {
					if e, ok := err.(*EvalError); !ok || !slices.Contains(evalKinds, e.Kind) {
						t.Fatalf("evaluation error %v (%T) is not an *EvalError of a known kind", err, err)
					}
				}
			}
		}
	})
}

func checkCompileError(t *testing.T, err error, lines int) {
	t.Helper()
	e, ok := err.(*diag.Error)
	if !ok {
		t.Fatalf("error %v (%T) is not a *diag.Error", err, err)
	}
	if !slices.Contains(compileKinds, e.Kind) || e.Line < 0 || e.Line > lines || e.Column < 0 || (e.Line > 0) != (e.Column > 0) {
		t.Fatalf("bad error %#v for a source of %d lines", e, lines)
	}
}
