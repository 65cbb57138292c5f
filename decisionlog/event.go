package decisionlog

import (
	"time"

	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// SchemaVersion is the layout of the events this package writes; readers (agentd
// replay) skip events of another version.
const SchemaVersion = 1

// Event is one decision event. Kind is one of config's event kinds (stage, check,
// refusal, shadow).
type Event struct {
	SchemaVersion  int                `json:"schema_version"`
	Kind           string             `json:"kind"`
	DecisionID     string             `json:"decision_id,omitempty"`
	Timestamp      time.Time          `json:"timestamp"`
	RequestID      string             `json:"request_id,omitempty"`
	Stage          engine.Stage       `json:"stage,omitempty"`
	Operation      op.Operation       `json:"operation,omitempty"`
	StepID         string             `json:"step_id,omitempty"`
	Generation     string             `json:"generation,omitempty"`
	PolicyRevision string             `json:"policy_revision,omitempty"`
	Outcome        string             `json:"outcome"`
	Cause          engine.Cause       `json:"cause,omitempty"`
	Hooks          []Hook             `json:"hooks,omitempty"`
	Violations     []engine.Violation `json:"violations,omitempty"`
	Denial         *Denial            `json:"denial,omitempty"`
	// WouldDeny lists what rules in warn or audit mode would have denied: the hooks'
	// findings for a stage call, the guards' for a check.
	WouldDeny []engine.Finding `json:"would_deny,omitempty"`
	// Approval is, for a check, the approval it consulted: its id, status and who
	// decided it, with the comment (docs/semantics.md §8.20).
	Approval   *engine.ApprovalMark `json:"approval,omitempty"`
	DurationMS float64              `json:"duration_ms"`
	// Input and Output are the call's payload after masking: what it was given
	// (request, metadata, enrichments, plan, prior_steps, result, call) and what it
	// answered (accepted_plan, response). Erased and Masked name the mask paths that
	// removed or replaced something.
	Input  map[string]any `json:"input,omitempty"`
	Output map[string]any `json:"output,omitempty"`
	Erased []string       `json:"erased,omitempty"`
	Masked []string       `json:"masked,omitempty"`
	// Shadow is set on a shadow event: the shadow configuration decided otherwise.
	Shadow *Shadow `json:"shadow,omitempty"`
}

// Hook is one hook invocation of a stage call and its decision.
type Hook struct {
	Name          string                  `json:"hook"`
	Status        engine.InvocationStatus `json:"status"`
	FailurePolicy engine.FailurePolicy    `json:"failure_policy,omitempty"`
	Action        engine.Action           `json:"action,omitempty"`
	Reason        engine.Reason           `json:"reason,omitempty"`
	Cause         engine.Cause            `json:"cause,omitempty"`
	// Mode is the hook's mode when it does not enforce (warn or audit).
	Mode       engine.RuleMode `json:"mode,omitempty"`
	DurationMS float64         `json:"duration_ms"`
}

// Denial is how an operation check was denied (or failed): the code and reason, the
// rule that decided (plan_binding or a guard, with its index), the binding mode, and
// the information-flow labels the guards saw (the request's, and those flowing into
// the call; docs/semantics.md §8.21).
type Denial struct {
	Code       string             `json:"code,omitempty"`
	Reason     string             `json:"reason,omitempty"`
	Guard      string             `json:"guard,omitempty"`
	GuardIndex *int               `json:"guard_index,omitempty"`
	Binding    engine.BindingMode `json:"binding,omitempty"`
	Labels     []string           `json:"labels,omitempty"`
	CallLabels []string           `json:"call_labels,omitempty"`
}

// Shadow is what a shadow event reports: the live decision (the event's decision id)
// and what the shadow generation decided instead.
type Shadow struct {
	Generation     string          `json:"generation"`
	PolicyRevision string          `json:"policy_revision,omitempty"`
	Change         compare.Change  `json:"change"`
	Live           compare.Verdict `json:"live"`
	Verdict        compare.Verdict `json:"verdict"`
}

// facts are what drop rules match of e.
func (e *Event) facts() config.LogFacts {
	return config.LogFacts{Kind: e.Kind, Stage: string(e.Stage), Operation: string(e.Operation), Outcome: e.Outcome, Cause: string(e.Cause)}
}

// outputFields are the payload fields that belong to Output.
var outputFields = map[string]bool{"accepted_plan": true, "response": true}

// setPayload files a masked payload under Input and Output.
func (e *Event) setPayload(p map[string]any) {
	for k, v := range p {
		dst := &e.Input
		if outputFields[k] {
			dst = &e.Output
		}
		if *dst == nil {
			*dst = map[string]any{}
		}
		(*dst)[k] = v
	}
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
