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
}

// callInput is the operation-guard input.
type callInput struct {
	Call        *op.Call       `json:"call"`
	Request     string         `json:"request"`
	Metadata    map[string]any `json:"metadata"`
	Enrichments map[string]any `json:"enrichments"`
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
// enrichments} exactly as encoding/json would render it (engine.View: field names,
// omitempty, nil slices and maps as null, CreatedAt as an RFC 3339 string), without a
// JSON round trip. It fails where encoding/json fails: a non-finite number, a time it
// cannot render, a value it cannot encode.
func PlanInput(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any) (ast.Value, error) {
	t, err := regovalue.Term(planInputs.View(&planInput{plan, phase, request, metadata, enrichments}))
	if err != nil {
		return nil, fmt.Errorf("policy: plan input: %w", err)
	}
	return t.Value, nil
}

// CallInput builds the operation-guard input {call, request, metadata, enrichments}, as
// PlanInput builds its input.
func CallInput(call *op.Call, request string, metadata, enrichments map[string]any) (ast.Value, error) {
	t, err := regovalue.Term(callInputs.View(&callInput{call, request, metadata, enrichments}))
	if err != nil {
		return nil, fmt.Errorf("policy: call input: %w", err)
	}
	return t.Value, nil
}
