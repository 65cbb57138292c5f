package expr

import (
	"context"
	"strconv"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// A guard over the flow: labels, history and call.labels read the call's op.Flow and
// Labels, as empty lists without them.
func TestVars_Flow(t *testing.T) {
	c := newCompiler(t, 0)
	src := `'secret' in labels && history.exists(h, h.capability == 'read_secret' && 'secret' in h.labels) && 'untrusted' in call.labels`
	prg := mustCompile(t, c, Guard, src, Bool)
	flow := &op.Flow{Labels: []string{"secret"}, History: []op.HistoryStep{{StepID: "s1", Capability: "read_secret", Status: "succeeded", Labels: []string{"secret"}}}}
	for _, tc := range []struct {
		name   string
		labels []string
		flow   *op.Flow
		want   bool
	}{
		{"everything", []string{"untrusted"}, flow, true},
		{"nothing flows in", nil, flow, false},
		{"no flow", []string{"untrusted"}, nil, false},
	} {
		call := &op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "s2", AgentName: "a", Capability: "c", Labels: tc.labels, Flow: tc.flow}
		got, err := prg.EvalBool(context.Background(), &Vars{Call: call, Flow: tc.flow})
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// The estimate knows the engine's bounds on a flow, so a nested comprehension over
// history and labels compiles under the default limit; a flow larger than the bounds
// (never one the engine builds) is evaluated with runtime cost tracking.
func TestCost_FlowBounds(t *testing.T) {
	c := newCompiler(t, 0)
	prg := mustCompile(t, c, Guard, `history.exists(h, labels.exists(l, l in call.labels))`, Bool)
	small := &op.Flow{Labels: []string{"a"}, History: []op.HistoryStep{{StepID: "s", Labels: []string{"a"}}}}
	if !prg.fits(&Vars{Call: &op.Call{Labels: []string{"a"}}, Flow: small}) {
		t.Error("a flow within the bounds does not fit")
	}
	many := make([]string, engine.MaxRequestLabels+1)
	for i := range many {
		many[i] = "l" + strconv.Itoa(i)
	}
	for name, vars := range map[string]*Vars{
		"too many labels":      {Call: &op.Call{}, Flow: &op.Flow{Labels: many}},
		"too many call labels": {Call: &op.Call{Labels: many}, Flow: small},
		"too long a history":   {Call: &op.Call{}, Flow: &op.Flow{History: make([]op.HistoryStep, engine.MaxHistory+1)}},
	} {
		if prg.fits(vars) {
			t.Errorf("%s fits", name)
		}
		if _, err := prg.EvalBool(context.Background(), vars); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// What an expression does not read is not looked at: a rule over the labels alone
	// fits beside a history past the bounds, one over the history alone beside too
	// many labels.
	long := &op.Flow{Labels: []string{"a"}, History: make([]op.HistoryStep, engine.MaxHistory+1)}
	if !mustCompile(t, c, Guard, `'a' in labels`, Bool).fits(&Vars{Call: &op.Call{}, Flow: long}) {
		t.Error("a rule over the labels alone does not fit beside a long history")
	}
	if mustCompile(t, c, Guard, `size(history) > 0`, Bool).fits(&Vars{Call: &op.Call{}, Flow: long}) {
		t.Error("a rule over a history past the bounds fits")
	}
	if !mustCompile(t, c, Guard, `size(history) > 0`, Bool).fits(&Vars{Call: &op.Call{}, Flow: &op.Flow{Labels: many, History: small.History}}) {
		t.Error("a rule over the history alone does not fit beside too many labels")
	}
}

// The label scope's result is the reported response, read in place; null without one.
func TestVars_LabelResult(t *testing.T) {
	c := newCompiler(t, 0)
	prg := mustCompile(t, c, Label, `result != null && result.kind == 'page' && call.capability == 'fetch_url'`, Bool)
	call := &op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "s", AgentName: "a", Capability: "fetch_url"}
	for _, tc := range []struct {
		result any
		want   bool
	}{{map[string]any{"kind": "page"}, true}, {map[string]any{"kind": "file"}, false}, {nil, false}} {
		got, err := prg.EvalBool(context.Background(), &Vars{Call: call, Reported: tc.result})
		if err != nil || got != tc.want {
			t.Errorf("result %v: %v, %v; want %v", tc.result, got, err, tc.want)
		}
	}
}
