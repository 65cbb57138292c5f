package engine

import (
	"context"
	"time"

	"github.com/agentd-dev/agentd/engine/op"
)

// CallOutcome is how a driver call ended. The values are bounded and safe as metric labels.
type CallOutcome string

// Stage call outcomes.
const (
	OutcomeContinue     CallOutcome = "continue"      // before_planning: planning goes on
	OutcomeShortCircuit CallOutcome = "short_circuit" // before_planning: answered now
	OutcomeHookContract CallOutcome = "hook_contract" // before_planning: a decision broke the contract
	OutcomeAccepted     CallOutcome = "accepted"      // after_planning: the phase's plan is accepted
	OutcomeRejected     CallOutcome = "rejected"      // after_planning: the required hook rejected it
	OutcomeInvalidPlan  CallOutcome = "invalid_plan"  // after_planning: the incoming plan broke a plan rule
	OutcomeReplayed     CallOutcome = "replayed"      // after_planning: a re-sent plan answered from the record
	OutcomeCompleted    CallOutcome = "completed"     // after_execution, after_synthesis
	OutcomePanic        CallOutcome = "panic"         // a hook panicked
	OutcomeAllowed      CallOutcome = "allowed"       // operation check
	OutcomeDenied       CallOutcome = "denied"        // operation check: a guard denied
	OutcomeGuardError   CallOutcome = "guard_error"   // operation check: a guard failed (fail closed)
	OutcomeInvalidCall  CallOutcome = "invalid"       // operation check: the call is malformed
)

// StageReport describes one finished stage call: what a decision event says of it.
type StageReport struct {
	DecisionID     string
	RequestID      string
	Generation     string
	PolicyRevision string
	Stage          Stage
	Outcome        CallOutcome
	// Cause is why a call that failed or was refused did (see Cause).
	Cause       Cause
	Started     time.Time
	Duration    time.Duration
	Invocations []Invocation
	// Violations are the policy's, for a rejected plan.
	Violations []Violation
	// Request, Metadata, Plan (the incoming plan of after_planning), Accepted (the plan
	// it accepted), Result (after_execution) and Response (the final response of
	// after_synthesis) are the call's input and output: observers mask them and keep
	// them out of logs unless told otherwise. They are the call's own values and must
	// be treated as read-only.
	Request  string
	Metadata map[string]any
	Plan     *RoutingPlan
	Accepted *RoutingPlan
	Result   *ExecutionResult
	Response string
	// Err is the error the call returned, if any.
	Err error
}

// CheckReport describes one finished operation check: what a decision event says of it.
type CheckReport struct {
	DecisionID string
	Call       op.Call
	// Record is the check as the request's record has it (binding, the deciding rule,
	// revisions); nil for a call refused before it was checked.
	Record         *OperationRecord
	Generation     string
	PolicyRevision string
	Outcome        CallOutcome
	Started        time.Time
	Duration       time.Duration
	// Err is the guards' verdict (a *op.Denial or *op.GuardError), the call's
	// *op.CallError, or a refusal.
	Err error
}

// Observer is told about every call the driver finishes, for metrics and decision
// logs. Implementations must be safe for concurrent use and return quickly: they run
// on the caller's path.
type Observer interface {
	// Staged reports one finished stage call.
	Staged(ctx context.Context, r *StageReport)
	// Checked reports one finished operation check.
	Checked(ctx context.Context, r *CheckReport)
	// Refused reports a call of stage refused before any hook ran.
	Refused(ctx context.Context, stage Stage, requestID string, r *RefusalError)
}

type nopObserver struct{}

func (nopObserver) Staged(context.Context, *StageReport)                  {}
func (nopObserver) Checked(context.Context, *CheckReport)                 {}
func (nopObserver) Refused(context.Context, Stage, string, *RefusalError) {}
