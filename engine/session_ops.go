package engine

import (
	"context"
	"time"

	"github.com/agentd-dev/agentd/engine/op"
)

// StartOperation runs the begin and guard phases of the request's generation for call
// (see op.Runner.Start, whose contract holds: unless the returned FinishFunc is nil the
// caller must call it when the operation is over, after a denial too). An empty
// call.RequestID is the session's.
func (s *Session) StartOperation(ctx context.Context, call op.Call) (context.Context, op.FinishFunc, error) {
	if call.RequestID == "" {
		call.RequestID = s.state.ID
	}
	ctx = WithRequestInfo(ctx, RequestInfo{ID: s.state.ID, Generation: s.gen.ID, Gate: NewGate(s.state.CacheVary, s.state.CacheReadDisabled)})
	return s.gen.Runner.Start(ctx, call)
}

// CheckResult is the guards' answer to one operation check.
type CheckResult struct {
	Allowed bool
	// Denial is set when a guard denied the call.
	Denial         *op.Denial
	Generation     string
	PolicyRevision string
}

// Check asks the guards about one call an orchestrator is about to make, on the
// generation of the call's request (the live one when the request is unknown or its
// generation is no longer kept), and finishes the operation at once. A denial is an
// answer (Allowed false); a malformed call is an *op.CallError, a broken guard an
// *op.GuardError (fail closed: the call must not run), a store failure a RefusalError.
func (d *Driver) Check(ctx context.Context, call op.Call) (*CheckResult, error) {
	started := time.Now()
	report := &CheckReport{Call: call, Started: started}
	defer func() {
		report.Duration = time.Since(started)
		d.observer.Checked(context.WithoutCancel(ctx), report)
	}()
	gen := d.gens.Live()
	if call.RequestID != "" {
		st, err := d.load(ctx, call.RequestID)
		if err != nil {
			report.Outcome, report.Err = CheckOutcome(err), err
			return nil, err
		}
		if st != nil {
			if g := d.gens.Lookup(st.Generation); g != nil {
				gen = g
			}
		}
	}
	if gen == nil {
		err := &RefusalError{Code: RefusedNotReady, RequestID: call.RequestID}
		report.Outcome, report.Err = CheckOutcome(err), err
		return nil, err
	}
	report.Generation, report.PolicyRevision = gen.ID, gen.PolicyRevision
	_, finish, err := gen.Runner.Start(ctx, call)
	report.Outcome, report.Err = CheckOutcome(err), err
	if finish == nil { // an invalid call: nothing ran
		return nil, err
	}
	outcome := op.Completed
	if err != nil {
		outcome = op.Denied
	}
	finish(op.Result{Call: call, StartedAt: started, EndedAt: time.Now(), Outcome: outcome, Err: err})
	result := &CheckResult{Allowed: err == nil, Generation: gen.ID, PolicyRevision: gen.PolicyRevision}
	if d, ok := op.AsDenial(err); ok {
		result.Denial = d
		return result, nil
	}
	if err != nil {
		return nil, err
	}
	return result, nil
}

// CheckOutcome classifies the error of an operation check: allowed for nil, then denied,
// guard_error, invalid (a malformed call) or the refusal code.
func CheckOutcome(err error) CallOutcome {
	if err == nil {
		return OutcomeAllowed
	}
	if _, ok := op.AsDenial(err); ok {
		return OutcomeDenied
	}
	if _, ok := op.AsGuardError(err); ok {
		return OutcomeGuardError
	}
	if r, ok := AsRefusal(err); ok {
		return CallOutcome(r.Code)
	}
	return OutcomeInvalidCall
}
