package engine

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoPlan is the cause recorded when an after_planning hook returns a nil plan.
var ErrNoPlan = errors.New("after-planning hook returned no plan")

// RequiredAfterPlanningError reports that the required after-planning hook rejected
// the phase. Reason is the decision reason (hook_error, invalid_type, invalid_plan,
// clone_failed); Cause is the underlying error and is reachable with errors.As/Is.
type RequiredAfterPlanningError struct {
	Hook   string
	Reason Reason
	Cause  error
	// Plan is the candidate the required hook reviewed (and rejected).
	Plan *RoutingPlan
}

func (e *RequiredAfterPlanningError) Error() string {
	return fmt.Sprintf("required after-planning hook %q failed: %v", e.Hook, e.Cause)
}

func (e *RequiredAfterPlanningError) Unwrap() error { return e.Cause }

// DecisionCause tells a policy denial from a failure (see Cause).
func (e *RequiredAfterPlanningError) DecisionCause() Cause { return causeFor(e.Reason, e.Cause) }

// AsRequiredAfterPlanningError finds a *RequiredAfterPlanningError in err's chain.
func AsRequiredAfterPlanningError(err error) (*RequiredAfterPlanningError, bool) {
	if err == nil {
		return nil, false // before r, which escapes to errors.As
	}
	var r *RequiredAfterPlanningError
	ok := errors.As(err, &r)
	return r, ok
}

// AfterPlanning runs the after_planning stage once for one phase's final, already
// validated plan. prior lists the steps of earlier, completed phases (used by plan
// validation). The plan's PhaseNumber (1 when unset) is recorded as PlanPhase and the
// invocation sequence restarts at 1.
//
// Each hook gets a deep copy of the current plan (a PlanReader gets the plan itself);
// plan itself is never mutated. The plan a hook returns is validated with ValidatePlan
// and, if valid, feeds the next hook.
// An optional hook whose copy fails, that errors, returns nil or returns an invalid
// plan leaves the previous plan in place (fail open). Any such failure of the required
// hook returns a *RequiredAfterPlanningError and no plan (fail closed): the caller must
// run no step of the phase and persist nothing as accepted. A hook panic is recorded
// and re-raised with its original value.
//
// A hook in warn or audit mode (the required one only where the config allows it) runs
// on a copy; a rejection is recorded as a finding instead of failing the phase, and an
// accepted rewrite is dropped: the next hook gets the plan this one got
// (docs/semantics.md §6.9). The contract is docs/semantics.md §4.
func (p *Pipeline) AfterPlanning(ctx context.Context, pctx *PipelineContext, plan *RoutingPlan, prior []RoutingStep, trail *Trail) (*RoutingPlan, error) {
	if plan == nil {
		return nil, fmt.Errorf("%w: after_planning needs a plan", ErrInvalidPlan)
	}
	phase := max(plan.PhaseNumber, 1)
	current := plan
	trail.reserve(len(p.after))
	for i := range p.after {
		next, err := p.runAfter(ctx, &p.after[i], i+1, phase, pctx, current, prior, trail)
		if err != nil {
			return nil, err
		}
		current = next
	}
	return current, nil
}

// runAfter runs one hook and returns the plan that goes on: the hook's accepted plan,
// or current when an optional hook's result is rejected.
func (p *Pipeline) runAfter(ctx context.Context, e *afterEntry, seq, phase int, pctx *PipelineContext, current *RoutingPlan, prior []RoutingStep, trail *Trail) (*RoutingPlan, error) {
	policy := FailOpen
	if e.required {
		policy = FailClosed
	}
	inv := p.begin(ctx, e.entry, StageAfterPlanning, seq, phase, trail)
	enforcing := e.mode.Enforcing()
	reject := func(status InvocationStatus, reason Reason, cause error) (*RoutingPlan, error) {
		if !enforcing { // recorded as a finding; the phase goes on with the plan it had
			inv.find(findingOf(e.mode, e.name, reason, cause))
			inv.finish(status, decide(policy, ActionContinue, reason), cause, nil)
			return current, nil
		}
		if !e.required {
			p.logger.WarnContext(ctx, "after_planning hook result rejected; keeping previous plan", "hook", e.name, "reason", reason, "error", cause)
			inv.finish(status, decide(FailOpen, ActionContinue, reason), cause, nil)
			return current, nil
		}
		inv.finish(status, decide(FailClosed, ActionTerminate, reason), cause, nil)
		return nil, &RequiredAfterPlanningError{Hook: e.name, Reason: reason, Cause: cause, Plan: current}
	}

	candidate := current
	if !e.readOnly || !enforcing {
		var err error
		if candidate, err = ClonePlan(current); err != nil {
			return reject(InvocationSkipped, ReasonCloneFailed, err)
		}
	}
	next, err := callAfter(inv, policy, e.hook, pctx, candidate)
	switch {
	case !e.required && errors.Is(err, ErrSkipped):
		inv.finish(InvocationSkipped, decide(FailOpen, ActionContinue, ReasonSkipped), nil, nil)
		return current, nil
	case err != nil:
		return reject(InvocationFailed, ReasonHookError, err)
	case next == nil:
		return reject(InvocationFailed, ReasonInvalidType, ErrNoPlan)
	}
	if next != current { // a PlanReader handing back the current plan changed nothing
		if err := p.ValidatePlan(next, prior); err != nil {
			return reject(InvocationFailed, ReasonInvalidPlan, err)
		}
	}
	inv.finish(InvocationSucceeded, decide(policy, ActionContinue, ReasonAccepted), nil, nil)
	if !enforcing { // a hook in warn or audit mode rewrites nothing
		return current, nil
	}
	return next, nil
}

func callAfter(inv invocation, policy FailurePolicy, h AfterPlanningHook, pctx *PipelineContext, plan *RoutingPlan) (*RoutingPlan, error) {
	defer func() {
		if r := recover(); r != nil {
			inv.panicked(r, policy, nil)
			panic(r)
		}
	}()
	return h.AfterPlanning(inv.ctx, pctx, plan)
}
