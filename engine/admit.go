package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/engine/op"
)

// Admission is one round of tool calls as the engine admitted it (Session.Admit).
type Admission struct {
	// Accepted is the after_planning stage's outcome: the plan it accepted for the
	// round, as AfterPlanning returns it.
	Accepted *PlanResult
	// Allowed are the accepted steps that may run, in the accepted plan's order.
	Allowed []AdmittedCall
	// Denied are the accepted steps that may not, in the same order.
	Denied []DeniedCall
}

// AdmittedCall is one call an adapter may forward: the accepted step (its namespace,
// agent and capability name the tool) and its arguments in canonical form.
type AdmittedCall struct {
	Step RoutingStep
	// Arguments is the JSON encoding of the step's reviewed parameters, an object ({}
	// for none), as AppendJSON writes it: keys sorted, one member per name, and no two
	// names a reader could take for one another (AmbiguousMember). It is the only form
	// of the call's arguments an adapter may forward to a tool or show a client.
	Arguments []byte
	// Check is the tool_call check that allowed the step.
	Check *CheckResult
}

// DeniedCall is one accepted step that may not run, and why: Denial when plan binding,
// a guard or the admission itself denied it (its parameters not an object, or
// ambiguous: codes DenialInvalidParameters, DenialAmbiguousParameters), Err when its
// check failed closed (*op.GuardError, *op.CallError).
type DeniedCall struct {
	Step   RoutingStep
	Denial *op.Denial
	// Approval is the approval the call needs (Denial approval_required, rejected or
	// expired), nil when no rule asked for one.
	Approval *Approval
	Err      error
}

// Denial codes of Admit's own denials: no guard ran; each is recorded as a denied
// tool_call operation check (guard AdmissionGuard) in the execution record and the
// decision log, like any other denial.
const (
	DenialInvalidParameters   = "invalid_parameters"
	DenialAmbiguousParameters = "ambiguous_parameters"
)

// ambiguousParameters is the denial (DenialAmbiguousParameters) of tool-call
// parameters with two member names a client may take for one (AmbiguousMember), nil
// when they have none.
func ambiguousParameters(params map[string]any) *op.Denial {
	x, y, ambiguous := AmbiguousMember(params)
	if !ambiguous {
		return nil
	}
	return &op.Denial{Code: DenialAmbiguousParameters,
		Reason: fmt.Sprintf("the reviewed parameters have members %q and %q, which a client may take for one", x, y)}
}

// AdmissionGuard is the guard name operation records give Admit's own denials.
const AdmissionGuard = "admission"

// deny records den, Admit's own denial of step, as a denied tool_call operation check
// (execution record and decision log) and adds it to a.Denied. The error is a failure
// to record it (a *RefusalError), which ends the admission.
func (s *Session) deny(ctx context.Context, a *Admission, step RoutingStep, params map[string]any, den *op.Denial) error {
	started := time.Now()
	id := decisionID(ctx)
	ctx = WithDecisionID(ctx, id)
	call := op.Call{
		Operation: op.ToolCall, RequestID: s.state.ID, StepID: step.StepID, Namespace: step.Namespace,
		AgentName: step.AgentName, Capability: step.Capability(), Parameters: params,
	}
	report := &CheckReport{DecisionID: id, Call: call, Started: started, Generation: s.gen.ID, PolicyRevision: s.gen.PolicyRevision}
	if st := s.known(); st != nil {
		found := *st
		report.State = &found
	}
	rec := s.operationRecord(id, &call, started)
	rec.Outcome, rec.Code, rec.Reason, rec.Guard, rec.GuardIndex = CheckDeny, den.Code, den.Reason, AdmissionGuard, ptr(-1)
	rec.Duration = time.Since(started)
	ctx = WithRequestInfo(ctx, s.info(NewGate(s.state.CacheVary, s.state.CacheReadDisabled)))
	err := s.recordCheck(ctx, rec, &report.Record)
	report.Outcome, report.Err = CheckOutcomeOf(den), den
	if err != nil {
		report.Outcome, report.Err = CheckOutcomeOf(err), err
	}
	report.Duration = time.Since(started)
	s.d.observer.Checked(context.WithoutCancel(ctx), report)
	if err != nil {
		return err
	}
	a.Denied = append(a.Denied, DeniedCall{Step: step, Denial: den})
	return nil
}

// Reason returns the denial's code and reason: the denial's, or guard_error or
// invalid_call and the failed check's error.
func (d DeniedCall) Reason() (code, reason string) {
	switch {
	case d.Denial != nil:
		return d.Denial.Code, d.Denial.Reason
	case isGuardError(d.Err):
		return "guard_error", d.Err.Error()
	}
	return "invalid_call", d.Err.Error()
}

func isGuardError(err error) bool { _, ok := op.AsGuardError(err); return ok }

func isRefusal(err error) bool { _, ok := AsRefusal(err); return ok }

// Admit admits one round of tool calls: plan is the round, reviewed as the phase's
// plan by the whole after_planning stage (AfterPlanning: validation, every hook, the
// required review), then each accepted step is checked as a tool_call operation
// (Driver.Check: plan binding, the guards, the step's claim), in the accepted plan's
// order. Every adapter admits a round this way, and forwards or records only the
// Allowed calls, in their canonical form.
//
// A plan the stage did not accept is the error AfterPlanning returns (a *PlanError,
// failing the request when it opened with InvalidPlanFails; a
// *RequiredAfterPlanningError, failing it unless its phases are independent), and
// nothing is checked. A refusal of a check (*RefusalError: the request may not go on,
// a store failed) ends the admission with that error; the calls checked before it were
// recorded. A denied or failed check denies that call only.
func (s *Session) Admit(ctx context.Context, plan *RoutingPlan, phase int) (*Admission, error) {
	out, err := s.AfterPlanning(ctx, plan, phase)
	if err != nil {
		return nil, err
	}
	// The review took the decision id ctx carries, if any; every check is a decision
	// of its own, with an id of its own.
	ctx = WithDecisionID(ctx, "")
	a := &Admission{Accepted: out}
	for _, step := range out.Plan.Steps {
		params, ok := step.Metadata["parameters"].(map[string]any)
		if !ok && step.Metadata["parameters"] != nil {
			if err := s.deny(ctx, a, step, nil, &op.Denial{Code: DenialInvalidParameters,
				Reason: "the reviewed step's parameters are not an object"}); err != nil {
				return nil, err
			}
			continue
		}
		if den := ambiguousParameters(params); den != nil {
			if err := s.deny(ctx, a, step, params, den); err != nil {
				return nil, err
			}
			continue
		}
		args := []byte("{}")
		if params != nil {
			if args, err = AppendJSON(nil, params); err != nil {
				if err := s.deny(ctx, a, step, params, &op.Denial{Code: DenialInvalidParameters,
					Reason: "the reviewed step's parameters do not encode as JSON: " + err.Error()}); err != nil {
					return nil, err
				}
				continue
			}
		}
		res, err := s.d.check(ctx, s, op.Call{
			Operation: op.ToolCall, RequestID: s.state.ID, StepID: step.StepID, Namespace: step.Namespace,
			AgentName: step.AgentName, Capability: step.Capability(), Parameters: params,
		})
		switch {
		case err == nil && res.Allowed:
			a.Allowed = append(a.Allowed, AdmittedCall{Step: step, Arguments: args, Check: res})
		case err == nil:
			a.Denied = append(a.Denied, DeniedCall{Step: step, Denial: res.Denial, Approval: res.Approval})
		case isRefusal(err):
			return nil, err
		default:
			a.Denied = append(a.Denied, DeniedCall{Step: step, Err: err})
		}
	}
	return a, nil
}
