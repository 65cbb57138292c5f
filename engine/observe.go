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

// StageReport describes one finished stage call.
type StageReport struct {
	RequestID   string
	Generation  string
	Stage       Stage
	Outcome     CallOutcome
	Started     time.Time
	Duration    time.Duration
	Invocations []Invocation
	// Request, Metadata and Response are payloads: observers keep them out of logs
	// unless told otherwise.
	Request  string
	Metadata map[string]any
	Response string
	// Err is the error the call returned, if any.
	Err error
}

// CheckReport describes one finished operation check.
type CheckReport struct {
	Call           op.Call
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
