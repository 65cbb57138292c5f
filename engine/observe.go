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
	// it accepted), Result (after_execution), Draft (the response after_synthesis was
	// given) and Response (its final response) are the call's input and output:
	// observers mask them and keep them out of logs unless told otherwise. They are the
	// call's own values and must be treated as read-only.
	Request  string
	Metadata map[string]any
	Plan     *RoutingPlan
	Accepted *RoutingPlan
	Result   *ExecutionResult
	Draft    string
	Response string
	// Enrichments are the request's enrichments as the call began (for before_planning,
	// a copy of its seeds: the stage writes the request's own map). PriorSteps are the
	// steps of the phases accepted before the call. Both are read-only too.
	Enrichments map[string]any
	PriorSteps  []RoutingStep
	// Phase and Failed are the request's as the call began: the phases it had accepted
	// and whether it had failed (what the hooks saw of it, RequestInfo).
	Phase  int
	Failed bool
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
	// State is the request's state as the check found it (a shallow copy the driver
	// never changes: plan binding decided against it), nil for a request the driver
	// does not know or a call refused before it was checked. Read-only.
	State *RequestState
	// Approval is the approval the check consulted, nil when no guard asked for one.
	// Read-only.
	Approval *Approval
	// Err is the guards' verdict (a *op.Denial or *op.GuardError), the call's
	// *op.CallError, or a refusal.
	Err error
}

// Observer is told about every call the driver finishes, for metrics and decision
// logs. Implementations must be safe for concurrent use and return quickly: they run
// on the caller's path. A report and the values it points to are never changed by the
// driver once it is reported, so an observer may keep it and read it later, from
// another goroutine, as long as it treats it as read-only.
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

// Observers returns an observer that tells each of obs, in order, about every call;
// nil entries are left out.
func Observers(obs ...Observer) Observer {
	var list multiObserver
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nopObserver{}
	case 1:
		return list[0]
	}
	return list
}

type multiObserver []Observer

func (m multiObserver) Staged(ctx context.Context, r *StageReport) {
	for _, o := range m {
		o.Staged(ctx, r)
	}
}

func (m multiObserver) Checked(ctx context.Context, r *CheckReport) {
	for _, o := range m {
		o.Checked(ctx, r)
	}
}

func (m multiObserver) Refused(ctx context.Context, stage Stage, id string, r *RefusalError) {
	for _, o := range m {
		o.Refused(ctx, stage, id, r)
	}
}
