package engine

import (
	"context"
	"errors"
)

// Cause says why a boundary refused or failed, beside the decision reason, so that an
// alert can tell "the policy said no" from "the engine broke" (docs/semantics.md §6).
// The values are bounded and safe as metric labels.
type Cause string

// Causes.
const (
	// CausePolicyDenied: a policy evaluated and denied (its violations are recorded).
	CausePolicyDenied Cause = "policy_denied"
	// CauseEvaluationError: a policy or expression could not be evaluated (an error,
	// an undefined or malformed decision).
	CauseEvaluationError Cause = "evaluation_error"
	// CauseTimeout: an evaluation or a hook ran out of time.
	CauseTimeout Cause = "timeout"
	// CauseInvalidPlan: a plan broke a plan rule (an incoming plan, or a mutation).
	CauseInvalidPlan Cause = "invalid_plan"
	// CauseInvalidType: a hook returned no plan.
	CauseInvalidType Cause = "invalid_type"
	// CauseCloneFailed: the plan could not be copied for a hook.
	CauseCloneFailed Cause = "clone_failed"
	// CauseHookError: a hook returned any other error.
	CauseHookError Cause = "hook_error"
	// CausePanic: a hook panicked.
	CausePanic Cause = "panic"
	// CauseContractError: a before_planning decision broke the decision contract.
	CauseContractError Cause = "contract_error"
	// CauseGuardDenied: a guard denied an operation.
	CauseGuardDenied Cause = "guard_denied"
	// CauseGuardError: a guard failed (fail closed).
	CauseGuardError Cause = "guard_error"
	// CauseBindingDenied: plan binding denied an operation.
	CauseBindingDenied Cause = "binding_denied"
)

// Causer is implemented by errors that know their cause: a policy denial
// (CausePolicyDenied), an evaluation error or timeout. CauseOf asks it.
type Causer interface {
	DecisionCause() Cause
}

// Violation is one reason a policy denied a plan.
type Violation struct {
	Code    string `json:"code"`
	StepID  string `json:"step_id,omitempty"`
	Message string `json:"message"`
}

// PolicyDenial is implemented by the error of a hook whose policy denied the plan: it
// carries the policy's violations.
type PolicyDenial interface {
	error
	PlanViolations() []Violation
}

// CauseOf classifies an error a hook returned: the cause it declares (Causer), a
// context deadline (timeout), a plan rule (invalid_plan), else hook_error.
func CauseOf(err error) Cause {
	if err == nil {
		return "" // before c, which escapes to errors.As
	}
	var c Causer
	switch {
	case errors.As(err, &c):
		return c.DecisionCause()
	case errors.Is(err, context.DeadlineExceeded):
		return CauseTimeout
	case errors.Is(err, ErrInvalidPlan):
		return CauseInvalidPlan
	}
	return CauseHookError
}

// ViolationsOf returns the policy violations err carries, nil when it carries none.
func ViolationsOf(err error) []Violation {
	if err == nil {
		return nil
	}
	var d PolicyDenial
	if errors.As(err, &d) {
		return d.PlanViolations()
	}
	return nil
}
