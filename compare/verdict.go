package compare

import (
	"cmp"
	"slices"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// Verdict is what one decision came to, in the terms two decisions are compared by.
type Verdict struct {
	Outcome engine.CallOutcome `json:"outcome"`
	Cause   engine.Cause       `json:"cause,omitempty"`
	// Violations are a rejected plan's (or, for an invalid plan, the plan rule it broke,
	// by its code and step).
	Violations []engine.Violation `json:"violations,omitempty"`
	// Denial is a denied operation's code and reason.
	Denial *op.Denial `json:"denial,omitempty"`
	// Response identifies an after_synthesis call's final response.
	Response Digest `json:"response,omitzero"`
}

// Blocks reports whether the decision stopped what it decided on: a rejected or invalid
// plan, a denied or failed check, a broken before_planning contract, a hook panic.
func (v Verdict) Blocks() bool {
	switch v.Outcome {
	case engine.OutcomeRejected, engine.OutcomeInvalidPlan, engine.OutcomeDenied, engine.OutcomeGuardError,
		engine.OutcomeHookContract, engine.OutcomePanic, engine.OutcomeInvalidCall:
		return true
	}
	return false
}

// Change is how a second decision differs from a first.
type Change string

// Changes.
const (
	Same         Change = ""
	NewlyDenied  Change = "newly_denied"  // the first let it through, the second blocks it
	NewlyAllowed Change = "newly_allowed" // the first blocked it, the second lets it through
	// Changed: both block (or both let through) but not alike: another outcome, other
	// violations (by code and step), another denial code or another final response.
	Changed Change = "changed"
)

// Compare classifies how other differs from live. Violation messages and denial
// reasons are not compared: a policy may word them differently for the same decision.
// Two after_synthesis calls differ when their final responses do.
func Compare(live, other Verdict) Change {
	switch {
	case !live.Blocks() && other.Blocks():
		return NewlyDenied
	case live.Blocks() && !other.Blocks():
		return NewlyAllowed
	case live.Outcome != other.Outcome || !slices.Equal(violationKeys(live.Violations), violationKeys(other.Violations)) ||
		denialCode(live.Denial) != denialCode(other.Denial) || live.Response != other.Response:
		return Changed
	}
	return Same
}

// violationKeys are the sorted, distinct code and step pairs of vs.
func violationKeys(vs []engine.Violation) []engine.Violation {
	keys := make([]engine.Violation, len(vs))
	for i, v := range vs {
		keys[i] = engine.Violation{Code: v.Code, StepID: v.StepID}
	}
	slices.SortFunc(keys, func(a, b engine.Violation) int {
		return cmp.Or(cmp.Compare(a.Code, b.Code), cmp.Compare(a.StepID, b.StepID))
	})
	return slices.Compact(keys)
}

func denialCode(d *op.Denial) string {
	if d == nil {
		return ""
	}
	return d.Code
}
