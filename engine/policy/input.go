package policy

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/policy/internal/regovalue"
)

// planInput is the plan-review input. Its engine.View is the input policies see, built
// as a Rego value by PlanInput and keyed by PlanMemo.Lookup (and PlanKey).
type planInput struct {
	Plan        *engine.RoutingPlan `json:"plan"`
	Phase       int                 `json:"phase"`
	Request     string              `json:"request"`
	Metadata    map[string]any      `json:"metadata"`
	Enrichments map[string]any      `json:"enrichments"`
	Labels      []string            `json:"labels"`
	History     []op.HistoryStep    `json:"history"`
}

// newPlanInput is the plan-review input; a nil flow gives empty labels and history.
func newPlanInput(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any, flow *op.Flow) planInput {
	labels, history := flowOf(flow)
	return planInput{plan, phase, request, metadata, enrichments, labels, history}
}

// flowOf returns the labels and history of flow, empty lists (never null) when it has
// none.
func flowOf(flow *op.Flow) ([]string, []op.HistoryStep) {
	labels, history := noLabels, noHistory
	if flow != nil && flow.Labels != nil {
		labels = flow.Labels
	}
	if flow != nil && flow.History != nil {
		history = flow.History
	}
	return labels, history
}

var (
	noLabels  = []string{}
	noHistory = []op.HistoryStep{}
)

// callInput is the operation-guard input.
type callInput struct {
	Call        *op.Call         `json:"call"`
	Request     string           `json:"request"`
	Metadata    map[string]any   `json:"metadata"`
	Enrichments map[string]any   `json:"enrichments"`
	Labels      []string         `json:"labels"`
	History     []op.HistoryStep `json:"history"`
}

var (
	planInputs = engine.ViewerOf[planInput]()
	callInputs = engine.ViewerOf[callInput]()
)

func init() {
	regovalue.Intern[planInput]()
	regovalue.Intern[callInput]()
}

// PlanInput builds the after-planning input {plan, phase, request, metadata,
// enrichments, labels, history} (labels and history from flow, the request's: empty
// lists when nil) exactly as encoding/json would render it (engine.View: field names,
// omitempty, nil slices and maps as null, CreatedAt as an RFC 3339 string), without a
// JSON round trip. It fails where encoding/json fails: a non-finite number, a time it
// cannot render, a value it cannot encode.
func PlanInput(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any, flow *op.Flow) (ast.Value, error) {
	in := newPlanInput(plan, phase, request, metadata, enrichments, flow)
	t, err := regovalue.Term(planInputs.View(&in))
	if err != nil {
		return nil, fmt.Errorf("policy: plan input: %w", err)
	}
	return t.Value, nil
}

// CallInput builds the operation-guard input {call, request, metadata, enrichments,
// labels, history}, as PlanInput builds its input, labels and history from call.Flow.
// The call's own labels (op.Call.Labels) are input.call.labels, always a list.
func CallInput(call *op.Call, request string, metadata, enrichments map[string]any) (ast.Value, error) {
	labels, history := flowOf(call.Flow)
	t, err := regovalue.Term(callInputs.View(&callInput{call, request, metadata, enrichments, labels, history}))
	if err != nil {
		return nil, fmt.Errorf("policy: call input: %w", err)
	}
	if c, ok := t.Value.(ast.Object).Get(ast.InternedTerm("call")).Value.(ast.Object); ok {
		in := make([]*ast.Term, len(call.Labels))
		for i, l := range call.Labels {
			in[i] = ast.StringTerm(l)
		}
		c.Insert(ast.InternedTerm("labels"), ast.ArrayTerm(in...))
	}
	return t.Value, nil
}
