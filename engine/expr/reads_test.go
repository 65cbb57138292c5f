package expr

import (
	"context"
	"testing"
)

// MayRead says whether an expression may read call.step: it does when it selects the
// step or uses call other than by selecting members. Each expression is also evaluated
// with and without a step: one whose result depends on the step must be reported as
// reading it.
func TestProgram_MayReadCallStep(t *testing.T) {
	c := newCompiler(t, 0)
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{`call.capability == "execute_trade"`, false},
		{`call.parameters.amount > 100.0`, false},
		{`call.capability == "x" || request == "y"`, false},
		{`has(call.parameters.amount)`, false},
		{`[{"step": 1}].exists(call, call.step == 1)`, false}, // a comprehension's own call
		{`metadata.step == "x"`, false},
		{`call.step.agent_name == "broker"`, true},
		{`has(call.step)`, true},
		{`call["step"] != null`, true},
		{`"step" in call`, true},
		{`size(call) > 8`, true},
		{`call.exists(k, k == "step")`, true},
		{`[call].exists(c, has(c.step))`, true},
		{`[1].exists(x, call.step.namespace == "")`, true},
	} {
		p := mustCompile(t, c, Guard, tc.src, Bool)
		if got := p.MayRead("call", "step"); got != tc.want {
			t.Errorf("%s: MayRead(call, step) = %v, want %v", tc.src, got, tc.want)
		}
		with, without := sampleCall(12000.0), sampleCall(12000.0)
		with.Step = map[string]any{"step_id": "s2", "agent_name": "broker", "namespace": ""}
		a, errA := p.EvalBool(context.Background(), &Vars{Request: "r", Call: with})
		b, errB := p.EvalBool(context.Background(), &Vars{Request: "r", Call: without})
		if (a != b || (errA == nil) != (errB == nil)) && !p.MayRead("call", "step") {
			t.Errorf("%s: depends on the step (%v, %v / %v, %v) but is not reported as reading it", tc.src, a, errA, b, errB)
		}
	}
	if mustCompile(t, c, Guard, `call.step.x == 1`, Bool).MayRead("request", "") {
		t.Error("an expression that does not use request reads it")
	}
}
