package expr

import (
	"context"
	"strings"
	"testing"
)

var errorKinds = []string{ErrKindSyntax, ErrKindTypeCheck, ErrKindUndeclaredVariable, ErrKindCostLimit,
	ErrKindUnknownScope, ErrKindInterrupted, ErrKindEval}

// FuzzCompile compiles arbitrary source in every scope and for every output kind, and
// evaluates whatever compiles. Nothing may panic; every failure is an *Error with a known
// kind and a position inside the source.
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
		for _, scope := range Scopes() {
			for _, want := range []Kind{Bool, String, Any} {
				p, err := c.Compile(scope, src, want)
				if err != nil {
					checkFuzzError(t, err, lines)
					continue
				}
				vars.Reset()
				if _, err := p.Eval(context.Background(), vars); err != nil {
					checkFuzzError(t, err, lines)
				}
			}
		}
	})
}

func checkFuzzError(t *testing.T, err error, lines int) {
	t.Helper()
	e, ok := AsError(err)
	if !ok {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	known := false
	for _, k := range errorKinds {
		known = known || e.Kind == k
	}
	if !known || e.Line < 0 || e.Line > lines || e.Column < 0 || (e.Line > 0) != (e.Column > 0) {
		t.Fatalf("bad error %#v for a source of %d lines", e, lines)
	}
}
