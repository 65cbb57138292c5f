package expr

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine/diag"
)

func TestScope_Variables(t *testing.T) {
	base := []string{"request", "metadata", "enrichments", "now"}
	tests := map[Scope][]string{
		BeforePlanning: base,
		AfterPlanning:  append(slices.Clone(base), "plan", "phase"),
		AfterExecution: append(slices.Clone(base), "result"),
		AfterSynthesis: append(slices.Clone(base), "response"),
		PlanStep:       append(slices.Clone(base), "plan", "phase", "step"),
		Guard:          append(slices.Clone(base), "call", "labels", "history"),
		Label:          append(slices.Clone(base), "call", "result"),
	}
	if got := len(scopes()); got != len(tests) {
		t.Fatalf("len(scopes()) = %d, want %d", got, len(tests))
	}
	for _, scope := range scopes() {
		if got := scope.variables(); !slices.Equal(got, tests[scope]) {
			t.Errorf("%s.variables() = %v, want %v", scope, got, tests[scope])
		}
	}
	if got := Scope("nope").variables(); got != nil {
		t.Errorf("unknown scope Variables() = %v, want nil", got)
	}
}

// TestCompile_VariableAvailability compiles a reference to every variable in every scope:
// it compiles where the scope declares the variable and is undeclared_variable elsewhere.
func TestCompile_VariableAvailability(t *testing.T) {
	c := newCompiler(t, 0)
	all := []string{"request", "metadata", "enrichments", "now", "plan", "phase", "step", "result", "response", "call", "labels", "history"}
	for _, scope := range scopes() {
		for _, name := range all {
			_, err := c.Compile(scope, "size(["+name+"]) == 1", Bool)
			if slices.Contains(scope.variables(), name) {
				if err != nil {
					t.Errorf("%s: %s: %v", scope, name, err)
				}
				continue
			}
			e := wantDiag(t, err, diag.KindCELUndeclaredVariable)
			if e.Line != 1 || e.Column != 7 || !strings.Contains(e.Message, `"`+name+`"`) {
				t.Errorf("%s: %s: error = %v, want 1:7 naming the variable", scope, name, e)
			}
		}
	}
}

func TestCompile_Errors(t *testing.T) {
	tests := []struct {
		name      string
		scope     Scope
		src       string
		want      Kind
		limit     uint64
		kind      diag.Kind
		line, col int
		message   string // exact when set
		contains  string
	}{
		{name: "plan in before_planning", scope: BeforePlanning, src: "size(plan.steps) > 0",
			kind: diag.KindCELUndeclaredVariable, line: 1, col: 6,
			message: `variable "plan" is not available in before_planning (available in after_planning, plan_step)`},
		{name: "step in after_planning, second line", scope: AfterPlanning,
			src:  "request == 'a' &&\n  step.metadata.capability == 'x'",
			kind: diag.KindCELUndeclaredVariable, line: 2, col: 3,
			message: `variable "step" is not available in after_planning (available in plan_step)`},
		{name: "response in guard", scope: Guard, src: "response == ''", kind: diag.KindCELUndeclaredVariable,
			line: 1, col: 1, message: `variable "response" is not available in guard (available in after_synthesis)`},
		{name: "call in after_execution", scope: AfterExecution, src: "result.success || call.phase > 1",
			kind: diag.KindCELUndeclaredVariable, line: 1, col: 19,
			message: `variable "call" is not available in after_execution (available in guard, label)`},
		{name: "unknown variable", scope: BeforePlanning, src: "tenant == 'acme'", kind: diag.KindCELUndeclaredVariable,
			line: 1, col: 1, message: `undeclared variable "tenant" in before_planning`},
		{name: "comprehension variable shadows nothing", scope: BeforePlanning,
			src: "[1].exists(plan, plan == 1) && plan == 1", kind: diag.KindCELUndeclaredVariable, line: 1, col: 32},
		{name: "syntax error in multi-line expression", scope: BeforePlanning,
			src:  "request == 'a' &&\n  (metadata.x ||\n   )",
			kind: diag.KindCELSyntax, line: 3, col: 4, contains: "mismatched input ')'"},
		{name: "assignment is not CEL", scope: BeforePlanning, src: "request == 'a' &&\n  metadata.x = 1",
			kind: diag.KindCELSyntax, line: 2, col: 14},
		{name: "empty source", scope: BeforePlanning, src: "", kind: diag.KindCELSyntax, line: 1, col: 1},
		{name: "int where bool wanted", scope: BeforePlanning, src: "  size(request)", kind: diag.KindCELTypeCheck,
			line: 1, col: 3, message: "expression returns int, want bool"},
		{name: "bool where string wanted", scope: AfterSynthesis, src: "\n response == ''", want: String,
			kind: diag.KindCELTypeCheck, line: 2, col: 2, message: "expression returns bool, want string"},
		{name: "no overload", scope: BeforePlanning, src: "request + 1 == 'x'", kind: diag.KindCELTypeCheck,
			line: 1, col: 9, contains: "no matching overload"},
		{name: "invalid regex constant", scope: BeforePlanning, src: "request.matches('[')",
			kind: diag.KindCELTypeCheck, line: 1, col: 1, contains: "regexp"},
		{name: "nested comprehensions over metadata", scope: BeforePlanning, limit: 5000,
			src:  "metadata.items.exists(x,\n  metadata.items.exists(y, x == y))",
			kind: diag.KindCELCostLimit, line: 1, col: 1, contains: "exceeds the limit 5000"},
		{name: "nested comprehensions over default limit", scope: AfterPlanning,
			src:  "plan.steps.all(s, plan.steps.exists(t, t.step_id == s.step_id))",
			kind: diag.KindCELCostLimit, line: 1, col: 1, contains: "estimated cost"},
		{name: "a byte column after a multi-byte character", scope: BeforePlanning, src: "'é' == tenant",
			kind: diag.KindCELUndeclaredVariable, line: 1, col: 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newCompiler(t, tt.limit).Compile(tt.scope, tt.src, tt.want)
			e := wantDiag(t, err, tt.kind)
			if e.Line != tt.line || e.Column != tt.col {
				t.Errorf("position = %d:%d, want %d:%d (%v)", e.Line, e.Column, tt.line, tt.col, e)
			}
			if tt.message != "" && e.Message != tt.message {
				t.Errorf("message = %q, want %q", e.Message, tt.message)
			}
			if !strings.Contains(e.Message, tt.contains) {
				t.Errorf("message = %q, want it to contain %q", e.Message, tt.contains)
			}
		})
	}
}

func TestCompile_Accepts(t *testing.T) {
	tests := []struct {
		scope Scope
		src   string
		want  Kind
	}{
		{BeforePlanning, "has(metadata.tenant)", Bool},
		{BeforePlanning, "metadata.flag", Bool}, // dyn: checked at evaluation
		{BeforePlanning, "metadata.name", String},
		{BeforePlanning, "request.lowerAscii().trim()", String},
		{BeforePlanning, "{'n': size(request)}", Any},
		{AfterPlanning, "plan.steps.exists(s, s.metadata.capability == 'execute_trade')", Bool},
		{PlanStep, "step.metadata.capability == 'x' && phase > 0", Bool},
		{AfterExecution, "result.steps.filter(s, !s.success).map(s, s.step_id)", Any},
		{Guard, "call.capability == 'execute_trade' && double(call.parameters.amount) > 10000.0", Bool},
		{BeforePlanning, "now > timestamp('2020-01-01T00:00:00Z')", Bool},
		{BeforePlanning, "type(request) == string", Bool},
	}
	c := newCompiler(t, 0)
	for _, tt := range tests {
		p, err := c.Compile(tt.scope, tt.src, tt.want)
		if err != nil {
			t.Errorf("Compile(%s, %q): %v", tt.scope, tt.src, err)
			continue
		}
		if p.want != tt.want {
			t.Errorf("Compile(%s, %q) compiled for %s", tt.scope, tt.src, p.want)
		}
	}
}

func TestCompile_UnknownScope(t *testing.T) {
	_, err := newCompiler(t, 0).Compile("during_planning", "true", Bool)
	if _, ok := diag.AsList(err); err == nil || ok {
		t.Fatalf("Compile in an unknown scope = %v, want a plain error", err)
	}
}
