package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/engine/op"
)

// CheckResult is the answer to one operation check.
type CheckResult struct {
	DecisionID string
	Allowed    bool
	// Warnings are what guards in warn mode would have denied.
	Warnings []Finding
	// Denial is set when plan binding or a guard denied the call.
	Denial *op.Denial
	// Approval is the approval the check consulted when a guard rule with effect
	// require_approval matched: pending (Denial approval_required), rejected, expired,
	// or approved and now used (Allowed).
	Approval       *Approval
	Generation     string
	PolicyRevision string
	Binding        BindingMode
}

// Check asks whether an orchestrator may make one call now, and finishes the
// operation's observers at once (the call itself runs elsewhere; its end is reported
// with Finish). The call runs on its request's generation (the live one when the
// request is unknown). A tool_call is first bound to the request's accepted plan (see
// bind; not for a generation whose binding is off), then the guards of the request's
// generation run and, when a newer generation is live, the live guards too: a denial
// by either denies. The outcome is recorded in the request's execution record. When a
// guard's denial leaves the step's accepted phase with nothing that can run (every
// step denied, or depending on a denied one), the request fails with a
// *PhaseDeniedError (cause guard_denied), unless its phases are independent.
//
// A denial is an answer (Allowed false). A malformed call is an *op.CallError, a broken
// guard an *op.GuardError (fail closed: the call must not run), a request that may not
// go on or a store failure a *RefusalError.
func (d *Driver) Check(ctx context.Context, call op.Call) (*CheckResult, error) {
	return d.check(ctx, nil, call)
}

// check is Check on session s, the request's, or with s nil on the request call names,
// attached afresh. A check of its own (s nil: Driver.Check, not a round Admit answers
// as a whole) whose guard denied a bound tool_call ends the request when the step's
// phase has nothing left that can run (endDeniedPhase).
func (d *Driver) check(ctx context.Context, s *Session, call op.Call) (*CheckResult, error) {
	own := s == nil
	started := time.Now()
	id := decisionID(ctx)
	ctx = WithDecisionID(ctx, id)
	report := &CheckReport{DecisionID: id, Call: call, Started: started}
	defer func() {
		report.Duration = time.Since(started)
		d.observer.Checked(context.WithoutCancel(ctx), report)
	}()
	if err := call.Validate(); err != nil {
		report.Outcome, report.Err = CheckOutcomeOf(err), err
		return nil, err
	}
	if s == nil {
		var err error
		if s, err = d.attach(ctx, call.RequestID); err != nil {
			report.Outcome, report.Err = CheckOutcomeOf(err), err
			return nil, err
		}
	}
	report.Generation, report.PolicyRevision = s.gen.ID, s.gen.PolicyRevision
	ctx, span := s.gen.telemetry().startTool(ctx, s.known(), call)
	defer func() { endTool(span, report.Outcome, report.Err) }()
	ofRequest(s.known(), &report.Call) // the decision log shows what the guards saw
	if st := s.known(); st != nil {
		found := *st // the check writes new revisions; this one stays as it was
		report.State = &found
	}
	_, end, verdict, err := s.check(ctx, call, started, &report.Record, &report.Approval)
	if err != nil {
		report.Outcome, report.Err = CheckOutcomeOf(err), err
		return nil, err
	}
	if end != nil { // nil when the call, given the request's context, is invalid
		end(op.Result{Call: call, StartedAt: started, EndedAt: time.Now(), Outcome: outcomeOf(verdict), Err: verdict})
	}
	report.Outcome, report.Err = CheckOutcomeOf(verdict), verdict
	var warnings []Finding
	if report.Record != nil {
		warnings = Warnings(report.Record.WouldDeny)
	}
	result := &CheckResult{DecisionID: id, Allowed: verdict == nil, Warnings: warnings, Approval: report.Approval, Generation: s.gen.ID, PolicyRevision: s.gen.PolicyRevision, Binding: s.gen.binding()}
	if den, ok := op.AsDenial(verdict); ok {
		result.Denial = den
		if own && report.Record != nil && report.Record.Binding != "" && report.Record.Guard != BindingGuard {
			s.endDeniedPhase(ctx, call.StepID)
		}
		return result, nil
	}
	if verdict != nil {
		return nil, verdict
	}
	return result, nil
}

// attach returns a session for an operation check of request id: the request's own,
// or, for an unknown request, one on the live generation that writes no state (not
// for a call confined to a tenant: an unknown request belongs to none).
func (d *Driver) attach(ctx context.Context, id string) (*Session, error) {
	st, err := d.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if st == nil {
		if err := CheckTenant(ctx, id, ""); err != nil {
			return nil, err
		}
		gen := d.gens.Live()
		if gen == nil {
			return nil, &RefusalError{Code: RefusedNotReady, RequestID: id}
		}
		s := d.newSession(gen, d.openState(id, gen, Opening{}), false)
		s.unknown = true
		return s, nil
	}
	gen, err := d.pinned(ctx, st)
	if err != nil {
		return nil, err
	}
	return d.newSession(gen, st, false), nil
}

// StartOperation checks call as Check does and returns the context the operation must
// run with and its finish, for a caller that runs the operation itself (the Go
// Lifecycle). Unless the FinishFunc is nil (a malformed call, a refusal), the caller
// must call it when the operation is over, after a denial too: it runs the observers'
// finish callbacks and, for an allowed bound tool_call, reports the step's finish
// (completed: succeeded; otherwise failed, not retryable). An empty call.RequestID is
// the session's.
func (s *Session) StartOperation(ctx context.Context, call op.Call) (context.Context, op.FinishFunc, error) {
	if call.RequestID == "" {
		call.RequestID = s.state.ID
	}
	if err := call.Validate(); err != nil {
		return ctx, nil, err
	}
	started := time.Now()
	opctx, end, verdict, err := s.check(ctx, call, started, nil, nil)
	if err != nil {
		return ctx, nil, err
	}
	finish := func(r op.Result) {
		end(r)
		if verdict != nil || call.Operation != op.ToolCall || s.gen.binding() == BindingOff {
			return
		}
		f := Finish{RequestID: call.RequestID, StepID: call.StepID, Status: RunSucceeded, Duration: r.EndedAt.Sub(r.StartedAt)}
		if r.Outcome != op.Completed {
			f.Status = RunFailed
			if r.Err != nil {
				f.Error = r.Err.Error()
			}
		}
		_ = s.finish(context.WithoutCancel(ctx), f)
	}
	return opctx, finish, verdict
}

// check runs one operation check on the session's request: binding, the guards (the
// live generation's too when newer), the step's claim and the record. verdict is nil
// (allowed), a *op.Denial or a *op.GuardError; err is a refusal (or an *op.CallError
// when the call with the request's metadata is malformed). end runs the
// observers' finish callbacks and must be called. When recorded is not nil, it is set
// to the check's record, and approval to the approval the check consulted (when a
// guard asked for one, after the guards allowed the call: see RequireApproval).
func (s *Session) check(ctx context.Context, call op.Call, started time.Time, recorded **OperationRecord, approval **Approval) (opctx context.Context, end op.FinishFunc, verdict error, err error) {
	ctx = WithRequestInfo(ctx, s.info(NewGate(s.state.CacheVary, s.state.CacheReadDisabled)))
	ofRequest(s.known(), &call)
	mode := s.gen.binding()
	bound := call.Operation == op.ToolCall && mode != BindingOff
	rec := s.operationRecord(decisionID(ctx), &call, started)
	if call.Operation == op.ToolCall {
		// Parameters a client may read otherwise than the guards do are denied first,
		// as Admit denies them (guard AdmissionGuard).
		if den := ambiguousParameters(call.Parameters); den != nil {
			rec.Outcome, rec.Code, rec.Reason, rec.Guard, rec.GuardIndex = CheckDeny, den.Code, den.Reason, AdmissionGuard, ptr(-1)
			rec.Duration = time.Since(started)
			return ctx, func(op.Result) {}, den, s.recordCheck(ctx, rec, recorded)
		}
	}
	if bound {
		rec.Binding = mode
		if den := bind(mode, s.known(), &call); den != nil {
			rec.Outcome, rec.Code, rec.Reason, rec.Guard, rec.GuardIndex = CheckDeny, den.Code, den.Reason, BindingGuard, ptr(-1)
			rec.Duration = time.Since(started)
			return ctx, func(op.Result) {}, den, s.recordCheck(ctx, rec, recorded)
		}
	}
	live := s.d.gens.Live()
	if live != nil && live.ID == s.gen.ID {
		live = nil // the live generation is consulted too when the request is pinned to another
	}
	if bound && (s.gen.Runner.ReadsStep(call.Operation) || live != nil && live.Runner.ReadsStep(call.Operation)) {
		call.Step = stepObject(acceptedStep(s.state, call.StepID))
	}
	call.Labels, call.Flow = s.flowOf(&call)
	rec.Labels, rec.CallLabels = call.Flow.Labels, call.Labels
	ctx, findings := withFindingSink(ctx)
	opctx, end, verdict = s.gen.Runner.Start(ctx, call)
	if end == nil {
		// The call with the request's metadata is malformed (metadata the request was
		// opened with may nest deeper than a call's may): an *op.CallError, no verdict.
		return ctx, nil, nil, verdict
	}
	if verdict == nil {
		if live != nil {
			rec.LiveGeneration, rec.LivePolicyRevision = live.ID, live.PolicyRevision
			_, liveEnd, liveVerdict := live.Runner.Start(ctx, call)
			liveEnd(op.Result{Call: call, StartedAt: started, EndedAt: time.Now(), Outcome: outcomeOf(liveVerdict), Err: liveVerdict})
			verdict = liveVerdict
		}
	}
	describe(&rec, verdict)
	rec.WouldDeny = findings.list()
	ask, asked := findings.firstAsk()
	if !asked && bound && verdict == nil {
		ask, asked = stepAsk(acceptedStep(s.state, call.StepID)) // the plan review's require_approval
	}
	if asked && verdict == nil {
		a, den, err := s.approval(ctx, &call, ask, rec.DecisionID)
		if err != nil {
			end(op.Result{Call: call, StartedAt: started, EndedAt: time.Now(), Outcome: op.Canceled, Err: err})
			return ctx, nil, nil, err
		}
		if a != nil {
			rec.Approval = markOf(a, s.d.now())
			if approval != nil {
				*approval = a
			}
		}
		if den != nil {
			verdict = den
			describe(&rec, den)
			rec.Guard = ask.Rule
		}
	}
	// The claim and the record: one commit of a store that can defer (durably).
	err = s.durably(ctx, func(ctx context.Context) error {
		if verdict == nil && bound {
			if err := s.claim(ctx, mode, &call); err != nil {
				var den *op.Denial
				if !errors.As(err, &den) {
					return err
				}
				verdict = den
				describe(&rec, den)
				rec.Guard, rec.GuardIndex = BindingGuard, ptr(-1)
			}
		}
		rec.Duration = time.Since(started)
		return s.recordCheck(ctx, rec, recorded)
	})
	if err != nil {
		end(op.Result{Call: call, StartedAt: started, EndedAt: time.Now(), Outcome: op.Canceled, Err: err})
		return ctx, nil, nil, err
	}
	return opctx, end, verdict, nil
}

// ofRequest gives call the text and metadata of st, its request, what the guards see
// as request and metadata (CEL) or input.request and input.metadata (Rego): for a
// request the driver knows they are the request's own (what its hooks saw and its
// tenant was checked against), replacing whatever the call carried; a call on an
// unknown request (st nil) keeps its own.
func ofRequest(st *RequestState, call *op.Call) {
	if st != nil {
		call.Request, call.Metadata = st.Request, st.Metadata
	}
}

// known returns the request's state, nil for a request the driver does not know.
func (s *Session) known() *RequestState {
	if s.unknown {
		return nil
	}
	return s.state
}

// claim marks an allowed bound step started, so it runs once. A concurrent claim
// that landed first turns the check into a binding denial: after a lost race the call
// is bound again to the state that won it. A store that can store a run alone
// (RunStore) is asked to first; on a conflict the whole state is reloaded and written.
func (s *Session) claim(ctx context.Context, mode BindingMode, call *op.Call) error {
	start := func(st *RequestState) {
		run := st.runOf(call.StepID)
		run.Status, run.Retryable = RunStarted, false
		run.Attempts++
	}
	if rs, ok := s.d.states.(RunStore); ok {
		changed := RequestState{Runs: s.state.Runs} // the runs are all a claim changes
		start(&changed)
		err := rs.PutRun(ctx, s.state.ID, s.state.Revision+1, call.StepID, changed.Runs, s.d.ttl)
		if err == nil {
			s.state.Runs = changed.Runs
			s.state.Revision++
			return nil
		}
		if !errors.Is(err, ErrStaleRevision) {
			return storeFailure(s.state.ID, err)
		}
	}
	var lost *op.Denial
	first := s.state.Revision
	err := s.writeState(ctx, func(st *RequestState) {
		if st.Revision != first {
			if lost = bind(mode, st, call); lost != nil {
				return
			}
		}
		start(st)
	})
	if lost != nil {
		return lost
	}
	return err
}

// recordCheck appends one check to the request's execution record: through a store
// that appends (OperationStore) when it can, else by rewriting the record.
func (s *Session) recordCheck(ctx context.Context, rec OperationRecord, recorded **OperationRecord) error {
	if recorded != nil {
		*recorded = &rec
	}
	ctx = context.WithoutCancel(ctx)
	if appended, err := s.appendOperation(ctx, rec); appended || err != nil {
		return err
	}
	return s.writeRecord(ctx, func(r *ExecutionRecord) {
		r.Operations = append(r.Operations, rec)
	})
}

// appendOperation appends rec to the request's record with the record store's
// AppendOperation. appended is false, with no error, when that is not the way: a store
// without it, a session whose first write replaces the record, a request without one.
// A store failure is a refusal, as for writeRecord.
func (s *Session) appendOperation(ctx context.Context, rec OperationRecord) (appended bool, err error) {
	ops, ok := s.d.records.(OperationStore)
	if !ok {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fresh {
		return false, nil
	}
	switch err := ops.AppendOperation(ctx, s.state.ID, rec, s.d.now().UTC(), s.d.maxEntries); {
	case errors.Is(err, ErrRecordNotFound):
		return false, nil
	case err != nil:
		return false, storeFailure(s.state.ID, err)
	}
	return true, nil
}

// describe fills the outcome of rec from a guards' verdict.
func describe(rec *OperationRecord, verdict error) {
	rec.Outcome, rec.Code, rec.Reason, rec.Guard, rec.GuardIndex = CheckAllow, "", "", "", nil
	if den, ok := op.AsDenial(verdict); ok {
		rec.Outcome, rec.Code, rec.Reason = CheckDeny, den.Code, den.Reason
		return
	}
	if ge, ok := op.AsGuardError(verdict); ok {
		rec.Outcome, rec.Reason, rec.Guard, rec.GuardIndex = CheckGuardError, ge.Error(), ge.Guard, ptr(ge.Index)
	}
}

func ptr[T any](v T) *T { return &v }

// outcomeOf is the op outcome a check's verdict gives the observers' finish.
func outcomeOf(verdict error) op.Outcome {
	if verdict != nil {
		return op.Denied
	}
	return op.Completed
}

// CheckOutcomeOf classifies the error of an operation check: allowed for nil, then
// denied, guard_error, invalid (a malformed call) or the refusal code.
func CheckOutcomeOf(err error) CallOutcome {
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

// Finish is how a checked operation ended, as its caller reports it.
type Finish struct {
	RequestID string
	StepID    string
	// Status is RunSucceeded or RunFailed.
	Status RunStatus
	// Retryable, on a failure, allows another check of the same step.
	Retryable bool
	// Response is the step's response (JSON-shaped): {{<step>.response.…}} references
	// of later steps resolve against it.
	Response any
	// Labels are labels the result carries by the caller's word (a gateway honouring
	// an MCP server's _meta), beside those the generation's rules attach.
	Labels   []string
	Error    string
	Duration time.Duration
}

// FinishError reports a finish the driver cannot take.
type FinishError struct {
	Code   FinishCode
	Detail string
}

// FinishCode is why a finish was not taken.
type FinishCode string

// Finish codes.
const (
	// FinishNotStarted: no allowed check started the step (or it already finished).
	FinishNotStarted FinishCode = "not_started"
	// FinishInvalid: the status is not succeeded or failed, or the response is not
	// JSON-shaped.
	FinishInvalid FinishCode = "invalid_finish"
)

func (e *FinishError) Error() string { return string(e.Code) + ": " + e.Detail }

// Finish reports how a checked tool_call step ended: its run becomes succeeded or
// failed (terminal once; a retryable failure allows one more check), its response
// becomes known to plan binding, and the check's entry in the record gets the finish.
// A step no allowed check started, or one already finished, is a *FinishError
// (FinishNotStarted).
func (d *Driver) Finish(ctx context.Context, f Finish) error {
	if f.Status != RunSucceeded && f.Status != RunFailed {
		return &FinishError{Code: FinishInvalid, Detail: fmt.Sprintf("status must be %s or %s, got %q", RunSucceeded, RunFailed, f.Status)}
	}
	response, err := CloneValue(f.Response)
	if err != nil {
		return &FinishError{Code: FinishInvalid, Detail: "response: " + err.Error()}
	}
	f.Response = response
	st, err := d.load(ctx, f.RequestID)
	if err != nil {
		return err
	}
	if st == nil {
		return &FinishError{Code: FinishNotStarted, Detail: fmt.Sprintf("request %q is unknown", f.RequestID)}
	}
	gen, err := d.pinned(ctx, st)
	if err != nil {
		return err
	}
	s := d.newSession(gen, st, false)
	if err := s.finish(ctx, f); err != nil {
		return err
	}
	s.gen.telemetry().finishTool(ctx, st, f, acceptedStep(st, f.StepID), d.now())
	return nil
}

func (s *Session) finish(ctx context.Context, f Finish) error {
	var labels []string
	if f.Status == RunSucceeded {
		var err error
		if labels, err = s.stepLabels(ctx, &f); err != nil {
			return err
		}
	}
	var notStarted bool
	err := s.writeState(ctx, func(st *RequestState) {
		run := st.Runs[f.StepID]
		if notStarted = run == nil || run.Status != RunStarted; notStarted {
			return
		}
		run = st.runOf(f.StepID)
		run.Status, run.Retryable = f.Status, f.Status == RunFailed && f.Retryable
		if f.Status == RunSucceeded {
			run.Response, run.Labels = f.Response, labels
		}
		reportFinish(st, f.StepID, f.Status, labels)
	})
	if notStarted {
		return &FinishError{Code: FinishNotStarted, Detail: fmt.Sprintf("step %q of request %q has no started check", f.StepID, s.state.ID)}
	}
	if err != nil {
		return err
	}
	done := &FinishRecord{Status: f.Status, Retryable: f.Retryable, Error: f.Error, Response: f.Response, Labels: labels, Duration: f.Duration, At: s.d.now().UTC()}
	return s.writeRecord(context.WithoutCancel(ctx), func(r *ExecutionRecord) {
		for i := len(r.Operations) - 1; i >= 0; i-- {
			o := &r.Operations[i]
			if o.Operation == op.ToolCall && o.StepID == f.StepID && o.Outcome == CheckAllow && o.Finish == nil {
				o.Finish = done
				return
			}
		}
	})
}

// EffectError reports an effect update the driver cannot take.
type EffectError struct {
	Code   EffectUpdateCode
	Detail string
}

// EffectUpdateCode is why an effect update was not taken.
type EffectUpdateCode string

// Effect update codes.
const (
	// UpdateUnknownEffect: no invocation of the request announced the effect.
	UpdateUnknownEffect EffectUpdateCode = "unknown_effect"
	// UpdateTerminalEffect: the effect already has its terminal status.
	UpdateTerminalEffect EffectUpdateCode = "effect_terminal"
	// UpdateInvalidEffect: the update is not a valid effect (status, data).
	UpdateInvalidEffect EffectUpdateCode = "invalid_effect"
)

func (e *EffectError) Error() string { return string(e.Code) + ": " + e.Detail }

// CompleteEffect updates a pending effect a hook of request id announced, from outside
// the process that ran the hook (an audit writer reporting over HTTP, say), by effect
// id: the latest invocation that announced it gets the new effect, whose status may
// be pending again or terminal. A terminal effect takes no update (terminal once), an
// effect nobody announced cannot be created this way, and data must be valid JSON;
// each is an *EffectError. Started time and name are kept when the update leaves them
// empty.
func (d *Driver) CompleteEffect(ctx context.Context, id string, e Effect) error {
	if err := validateEffect(e); err != nil {
		return &EffectError{Code: UpdateInvalidEffect, Detail: err.Error()}
	}
	st, err := d.load(ctx, id)
	if err != nil {
		return err
	}
	gen := d.gens.Live()
	if st != nil {
		if gen = d.gens.Lookup(st.Generation); gen == nil {
			gen = d.gens.Live()
		}
		if err := CheckTenant(ctx, id, TenantOf(st.Metadata)); err != nil {
			return err
		}
	}
	if gen == nil {
		return &RefusalError{Code: RefusedNotReady, RequestID: id}
	}
	s := d.newSession(gen, d.openState(id, gen, Opening{}), false)
	var problem *EffectError
	e.Data = append(json.RawMessage(nil), e.Data...)
	err = s.rewriteRecord(ctx, false, func(rec *ExecutionRecord) bool {
		if err := CheckTenant(ctx, id, rec.Tenant); err != nil {
			problem = &EffectError{Code: UpdateUnknownEffect, Detail: fmt.Sprintf("request %q has no effect %q", id, e.EffectID)}
			return false
		}
		for i := len(rec.PipelineHooks) - 1; i >= 0; i-- {
			effects := rec.PipelineHooks[i].Effects
			for j := range effects {
				if effects[j].EffectID != e.EffectID {
					continue
				}
				if effects[j].Status.Terminal() {
					problem = &EffectError{Code: UpdateTerminalEffect, Detail: fmt.Sprintf("effect %q is %s already", e.EffectID, effects[j].Status)}
					return false
				}
				if e.Name == "" {
					e.Name = effects[j].Name
				}
				if e.StartedAt.IsZero() {
					e.StartedAt = effects[j].StartedAt
				}
				effects = slices.Clone(effects) // the recorded slice is shared with stored revisions
				effects[j], problem = e.replacing(effects[j], s.d.now().UTC()), nil
				rec.PipelineHooks[i].Effects = effects
				return true
			}
		}
		problem = &EffectError{Code: UpdateUnknownEffect, Detail: fmt.Sprintf("request %q has no effect %q", id, e.EffectID)}
		return false
	})
	switch {
	case errors.Is(err, ErrRecordNotFound):
		return &EffectError{Code: UpdateUnknownEffect, Detail: fmt.Sprintf("request %q has no record", id)}
	case err != nil:
		return err
	case problem != nil:
		return problem
	}
	return nil
}

// operationRecord is the record of decision id, a check of call on s's generation that
// started at started, before its outcome is known.
func (s *Session) operationRecord(id string, call *op.Call, started time.Time) OperationRecord {
	return OperationRecord{
		DecisionID: id, Operation: call.Operation, StepID: call.StepID, Namespace: call.Namespace, AgentName: call.AgentName,
		Capability: call.Capability, Generation: s.gen.ID, PolicyRevision: s.gen.PolicyRevision, StartedAt: started.UTC(),
	}
}
