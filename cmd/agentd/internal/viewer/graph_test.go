package viewer

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

func step(id, capability string, params map[string]any, deps ...string) engine.RoutingStep {
	return engine.RoutingStep{StepID: id, AgentName: "stock-service", Namespace: "demo-tools", DependsOn: deps,
		Metadata: map[string]any{"capability": capability, "parameters": params}}
}

type edgeKey struct {
	from, to  string
	dependsOn bool
	refs      string
}

func edgesOf(g Graph) []edgeKey {
	var out []edgeKey
	for _, e := range g.Edges {
		b, _ := json.Marshal(e.Refs)
		out = append(out, edgeKey{e.From, e.To, e.DependsOn, string(b)})
	}
	return out
}

func columns(g Graph) map[string]int {
	out := map[string]int{}
	for _, n := range g.Nodes {
		out[n.StepID] = (n.X - margin) / (NodeWidth + colGap)
	}
	return out
}

// depends_on and {{step-…}} references are edges, the way plan validation reads them:
// references anywhere in the parameters, ids without the step- prefix when they name a
// step, prior phases' steps as external nodes, malformed tokens ignored.
func TestGraphs_EdgesFollowDependenciesAndReferences(t *testing.T) {
	phase1 := &engine.RoutingPlan{PlanID: "p1", PhaseNumber: 1, Steps: []engine.RoutingStep{
		step("step-1", "stock_quote", map[string]any{"symbol": "ACME"}),
		step("step-2", "stock_quote", map[string]any{"above": "{{step-1.response.data.price}}", "nested": []any{map[string]any{"c": "{{step-1.response.data.currency}}"}}}, "step-1"),
		step("step-3", "stock_quote", map[string]any{"ccy": "{{step-2.response.data.currency}}", "bad": "{{ step-2.bad }}"}, "step-1", "step-2"),
		step("fetch", "stock_quote", map[string]any{"x": "{{user.name}}"}),
	}}
	later := step("step-4", "execute_trade", map[string]any{"price": "{{step-1.response.data.price}}", "from": "{{fetch.response.data.price}}"})
	later.ImplicitDeps = []string{"step-1", "fetch"}
	phase2 := &engine.RoutingPlan{PlanID: "p2", PhaseNumber: 2, Steps: []engine.RoutingStep{later}}
	rec := &engine.ExecutionRecord{
		Phases: []engine.PhaseRecord{{Phase: 1, Plan: phase1}, {Phase: 2, Plan: phase2}},
		Rejections: []engine.PlanRejection{{Phase: 3, Cause: engine.CausePolicyDenied, Plan: &engine.RoutingPlan{PlanID: "p3", PhaseNumber: 3,
			Steps: []engine.RoutingStep{step("step-5", "execute_trade", nil)}},
			Violations: []engine.Violation{{Code: "capability_not_allowed", StepID: "step-5"}, {Code: "plan_wide"}}}},
	}
	graphs := Graphs(rec)
	if len(graphs) != 3 || graphs[0].Rejected || graphs[1].Rejected || !graphs[2].Rejected || graphs[2].Cause != "policy_denied" {
		t.Fatalf("graphs = %+v", graphs)
	}
	g := graphs[0]
	if got, want := edgesOf(g), []edgeKey{
		{"step-1", "step-2", true, `["response.data.price","response.data.currency"]`},
		{"step-1", "step-3", true, "null"},
		{"step-2", "step-3", true, `["response.data.currency"]`},
	}; !slices.Equal(got, want) {
		t.Errorf("phase 1 edges = %v, want %v", got, want)
	}
	if got := columns(g); got["step-1"] != 0 || got["step-2"] != 1 || got["step-3"] != 2 || got["fetch"] != 0 {
		t.Errorf("phase 1 columns = %v", got)
	}
	g = graphs[1]
	if len(g.Nodes) != 3 || g.Nodes[0].StepID != "step-4" || !g.Nodes[1].External || !g.Nodes[2].External {
		t.Fatalf("phase 2 nodes = %+v", g.Nodes)
	}
	if got, want := edgesOf(g), []edgeKey{
		{"step-1", "step-4", true, `["response.data.price"]`},
		{"fetch", "step-4", true, `["response.data.price"]`},
	}; !slices.Equal(got, want) {
		t.Errorf("phase 2 edges = %v, want %v", got, want)
	}
	if n := graphs[2].Nodes; len(n) != 1 || !slices.Equal(n[0].Violations, []string{"capability_not_allowed"}) {
		t.Errorf("the rejected candidate's nodes = %+v", n)
	}
}

// A rejected candidate may have a cycle or depend on itself; it is still drawn.
func TestGraphs_CyclesAreDrawn(t *testing.T) {
	plan := &engine.RoutingPlan{Steps: []engine.RoutingStep{
		step("a", "stock_quote", nil, "b"), step("b", "stock_quote", nil, "a"), step("c", "stock_quote", nil, "c", "missing"),
	}}
	graphs := Graphs(&engine.ExecutionRecord{Rejections: []engine.PlanRejection{{Phase: 1, Cause: engine.CauseInvalidPlan, Rule: 4, Code: "dependency_cycle", StepID: "a", Plan: plan}}})
	if len(graphs) != 1 {
		t.Fatalf("graphs = %+v", graphs)
	}
	g := graphs[0]
	if got := columns(g); got["a"] != 1 || got["b"] != 1 || got["c"] != 0 {
		t.Errorf("columns = %v: the steps on the cycle go after the others", got)
	}
	if len(g.Edges) != 2 || !slices.Equal(g.Nodes[0].Violations, []string{"dependency_cycle"}) {
		t.Errorf("edges %+v, nodes %+v", g.Edges, g.Nodes)
	}
	for _, e := range g.Edges {
		if e.Path == "" {
			t.Errorf("edge %s->%s has no path", e.From, e.To)
		}
	}
}

// Every node lies inside the drawing, and no two overlap.
func TestGraphs_LayoutFitsItsNodes(t *testing.T) {
	var steps []engine.RoutingStep
	for i, id := range []string{"step-1", "step-2", "step-3", "step-4", "step-5", "step-6"} {
		var deps []string
		if i > 0 {
			deps = []string{"step-1"}
		}
		if i == 5 {
			deps = []string{"step-2", "step-3"}
		}
		steps = append(steps, step(id, "stock_quote", nil, deps...))
	}
	g := Graphs(&engine.ExecutionRecord{Phases: []engine.PhaseRecord{{Phase: 1, Plan: &engine.RoutingPlan{Steps: steps}}}})[0]
	for i, a := range g.Nodes {
		if a.X < 0 || a.Y < 0 || a.X+NodeWidth > g.Width || a.Y+NodeHeight > g.Height {
			t.Errorf("node %s at (%d,%d) outside %dx%d", a.StepID, a.X, a.Y, g.Width, g.Height)
		}
		for _, b := range g.Nodes[i+1:] {
			if a.X < b.X+NodeWidth && b.X < a.X+NodeWidth && a.Y < b.Y+NodeHeight && b.Y < a.Y+NodeHeight {
				t.Errorf("nodes %s and %s overlap", a.StepID, b.StepID)
			}
		}
	}
	if g.Edges[len(g.Edges)-1].LabelY > g.Height {
		t.Errorf("an edge below the nodes is outside the drawing")
	}
}

// A step's refused tool_call checks mark its node in the accepted plan with their
// codes (guard_error for a failed guard), and only there: not the earlier phase's
// node drawn as external, not a rejected candidate, not for an allowed check or
// another operation.
func TestGraphs_DeniedStepsCarryTheirCodes(t *testing.T) {
	phase1 := &engine.RoutingPlan{PlanID: "p1", PhaseNumber: 1, Steps: []engine.RoutingStep{
		step("step-1", "stock_quote", map[string]any{"symbol": "ACME"}),
		step("step-2", "execute_trade", map[string]any{"amount": 50000}),
	}}
	later := step("step-3", "stock_quote", map[string]any{"p": "{{step-2.response.data.order_id}}"})
	later.ImplicitDeps = []string{"step-2"}
	phase2 := &engine.RoutingPlan{PlanID: "p2", PhaseNumber: 2, Steps: []engine.RoutingStep{later}}
	rec := &engine.ExecutionRecord{
		Phases: []engine.PhaseRecord{{Phase: 1, Plan: phase1}, {Phase: 2, Plan: phase2}},
		Rejections: []engine.PlanRejection{{Phase: 3, Cause: engine.CausePolicyDenied, Plan: &engine.RoutingPlan{PlanID: "p3", PhaseNumber: 3,
			Steps: []engine.RoutingStep{step("step-2", "execute_trade", nil)}}}},
		Operations: []engine.OperationRecord{
			{Operation: op.ToolCall, StepID: "step-1", Outcome: engine.CheckAllow},
			{Operation: op.ToolCall, StepID: "step-2", Outcome: engine.CheckDeny, Code: "trade_limit"},
			{Operation: op.ToolCall, StepID: "step-2", Outcome: engine.CheckDeny, Code: "step_already_executed"},
			{Operation: op.ToolCall, StepID: "step-3", Outcome: engine.CheckGuardError, Reason: "no such key"},
			{Operation: op.Inference, StepID: "step-1", Outcome: engine.CheckDeny, Code: "model_blocked"},
		},
	}
	denials := map[string][]string{}
	for _, g := range Graphs(rec) {
		for _, n := range g.Nodes {
			key := fmt.Sprintf("%d/%s", g.Phase, n.StepID)
			if n.External {
				key += " (external)"
			}
			if g.Rejected {
				key += " (rejected)"
			}
			if n.Denials != nil {
				denials[key] = n.Denials
			}
		}
	}
	want := map[string][]string{"1/step-2": {"trade_limit", "step_already_executed"}, "2/step-3": {"guard_error"}}
	if !maps.EqualFunc(denials, want, slices.Equal) {
		t.Errorf("denials = %v, want %v", denials, want)
	}
}

// A step's node carries the labels its reported result got, from the finish of its
// allowed check, in the accepted plan and where a later phase draws it as external;
// a check without a finish, a refused check, a failed finish without labels and
// another operation add none.
func TestGraphs_StepsCarryTheirResultsLabels(t *testing.T) {
	phase1 := &engine.RoutingPlan{PlanID: "p1", PhaseNumber: 1, Steps: []engine.RoutingStep{
		step("step-1", "read_secret", map[string]any{"name": "payroll"}),
		step("step-2", "fetch_url", map[string]any{"url": "https://example.com"}),
		step("step-3", "send_email", map[string]any{"to": "x@evil.example"}, "step-1"),
	}}
	later := step("step-4", "send_email", map[string]any{"body": "{{step-1.response.value}}"})
	later.ImplicitDeps = []string{"step-1"}
	rec := &engine.ExecutionRecord{
		Phases: []engine.PhaseRecord{{Phase: 1, Plan: phase1}, {Phase: 2, Plan: &engine.RoutingPlan{PlanID: "p2", PhaseNumber: 2, Steps: []engine.RoutingStep{later}}}},
		Operations: []engine.OperationRecord{
			{Operation: op.ToolCall, StepID: "step-1", Outcome: engine.CheckAllow, Finish: &engine.FinishRecord{Status: engine.RunSucceeded, Labels: []string{"pii", "secret"}}},
			{Operation: op.ToolCall, StepID: "step-2", Outcome: engine.CheckAllow, Finish: &engine.FinishRecord{Status: engine.RunFailed}},
			{Operation: op.ToolCall, StepID: "step-2", Outcome: engine.CheckAllow, Finish: &engine.FinishRecord{Status: engine.RunSucceeded, Labels: []string{"untrusted"}}},
			{Operation: op.ToolCall, StepID: "step-3", Outcome: engine.CheckDeny, Code: "secret_egress", Labels: []string{"secret"}, CallLabels: []string{"secret"}},
			{Operation: op.ToolCall, StepID: "step-4", Outcome: engine.CheckAllow},
			{Operation: op.Inference, StepID: "step-4", Outcome: engine.CheckAllow, Finish: &engine.FinishRecord{Status: engine.RunSucceeded, Labels: []string{"model"}}},
		},
	}
	labels := map[string][]string{}
	for _, g := range Graphs(rec) {
		for _, n := range g.Nodes {
			key := fmt.Sprintf("%d/%s", g.Phase, n.StepID)
			if n.External {
				key += " (external)"
			}
			if n.Labels != nil {
				labels[key] = n.Labels
			}
		}
	}
	want := map[string][]string{"1/step-1": {"pii", "secret"}, "1/step-2": {"untrusted"}, "2/step-1 (external)": {"pii", "secret"}}
	if !maps.EqualFunc(labels, want, slices.Equal) {
		t.Errorf("labels = %v, want %v", labels, want)
	}
}
