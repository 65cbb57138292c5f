package policy

import (
	"reflect"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// MayRead says whether a guard policy may observe input.step. Each policy is also
// evaluated with and without a step: one whose decision depends on the step must be
// reported as reading it.
func TestQuery_MayReadStep(t *testing.T) {
	for _, tc := range []struct {
		name, rules string
		want        bool
	}{
		{"call only", `deny contains "big" if input.parameters.amount > 100`, false},
		{"request", `deny contains "x" if input.capability == "refund"`, false},
		{"step member", `deny contains "other agent" if input.step.agent_name != input.agent_name`, true},
		{"step tested", `deny contains "stepless" if not input.step`, true},
		{"input counted", `deny contains "many" if count(input) > 3`, true},
		{"input iterated", "deny contains k if {\n\tsome k, _ in input\n\tk == \"step\"\n}", true},
		{"input aliased", "deny contains \"s\" if {\n\tx := input\n\tx.step\n}", true},
		{"input to a function", "f(i) := i.step.agent_name\ndeny contains \"f\" if f(input) == \"broker\"", true},
		{"input walked", "deny contains \"w\" if {\n\tsome p\n\twalk(input, [p, _])\n\tp == [\"step\"]\n}", true},
		{"input by a variable key", `deny contains "v" if { k := concat("", ["st", "ep"]); input[k] }`, true},
		{"input by a constant key", `deny contains "c" if { k := "step"; input[k] }`, true},
		{"another member by a constant key", `deny contains "c" if { k := "capability"; input[k] == "x" }`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mustCompile(t, Options{}, "g.rego", "package g\n\n"+tc.rules+"\n")
			q := mustPrepare(t, b, "data.g")
			if got := q.MayRead("step"); got != tc.want {
				t.Errorf("MayRead(step) = %v, want %v", got, tc.want)
			}
			call := map[string]any{"capability": "refund", "agent_name": "broker", "parameters": map[string]any{"amount": 500}}
			without, err := ast.InterfaceToValue(call)
			if err != nil {
				t.Fatal(err)
			}
			call["step"] = map[string]any{"agent_name": "clerk"}
			with, _ := ast.InterfaceToValue(call)
			a, errA := q.GuardDecision(t.Context(), with)
			b2, errB := q.GuardDecision(t.Context(), without)
			if (!reflect.DeepEqual(a, b2) || (errA == nil) != (errB == nil)) && !q.MayRead("step") {
				t.Errorf("the decision depends on the step (%v, %v / %v, %v) but MayRead says it is not read", a, errA, b2, errB)
			}
		})
	}
}
