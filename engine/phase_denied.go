package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentd-dev/agentd/engine/op"
)

// PhaseDeniedError fails a request whose accepted phase has nothing left that can
// run: guards denied each of its steps, or the step depends on one they denied
// (docs/semantics.md §8.8). Its cause is guard_denied.
type PhaseDeniedError struct {
	Phase int
	// Steps are the phase's steps in plan order, each with its guard's denial code or
	// the step it depends on that cannot run.
	Steps []DeniedStep
}

// DeniedStep is why one step of a denied phase cannot run: Code, its latest check's
// denial, or DependsOn, a step of the phase that cannot run.
type DeniedStep struct {
	StepID    string
	Code      string
	DependsOn string
}

func (e *PhaseDeniedError) Error() string {
	parts := make([]string, len(e.Steps))
	for i, s := range e.Steps {
		if s.Code != "" {
			parts[i] = s.StepID + " (" + s.Code + ")"
		} else {
			parts[i] = s.StepID + " (depends on " + s.DependsOn + ")"
		}
	}
	return fmt.Sprintf("guards denied every step of phase %d: %s", e.Phase, strings.Join(parts, ", "))
}

// DecisionCause implements Causer.
func (e *PhaseDeniedError) DecisionCause() Cause { return CauseGuardDenied }

// phaseDenied returns the error that ends the request of rec when the accepted phase
// holding step has nothing left that can run, else nil. A step cannot run when it was
// never allowed and its latest tool_call check was a guard's denial (not plan
// binding's: that check was no call of the step), or when it depends (depends_on) on
// a step of the phase that cannot run. A step not yet checked, whose latest check
// failed (a guard error, retried) or is held for an approval still pending
// (approval_required, §8.20), can still run.
func phaseDenied(rec *ExecutionRecord, step string) *PhaseDeniedError {
	i := slices.IndexFunc(rec.Phases, func(ph PhaseRecord) bool {
		return ph.Plan != nil && slices.ContainsFunc(ph.Plan.Steps, func(s RoutingStep) bool { return s.StepID == step })
	})
	if i < 0 {
		return nil
	}
	phase := &rec.Phases[i] // a step id names one step of one accepted phase
	index := make(map[string]*RoutingStep, len(phase.Plan.Steps))
	for j := range phase.Plan.Steps {
		index[phase.Plan.Steps[j].StepID] = &phase.Plan.Steps[j]
	}
	latest := map[string]*OperationRecord{}
	allowed := map[string]bool{}
	for i := range rec.Operations {
		if o := &rec.Operations[i]; o.Operation == op.ToolCall {
			latest[o.StepID] = o
			allowed[o.StepID] = allowed[o.StepID] || o.Outcome == CheckAllow
		}
	}
	why := map[string]*DeniedStep{}
	var blocked func(s *RoutingStep) *DeniedStep
	blocked = func(s *RoutingStep) *DeniedStep {
		if d, seen := why[s.StepID]; seen {
			return d // nil while s is being decided: an accepted plan has no cycle, a broken one stops here
		}
		why[s.StepID] = nil
		var d *DeniedStep
		if o := latest[s.StepID]; !allowed[s.StepID] && o != nil && o.Outcome == CheckDeny && o.Guard != BindingGuard && o.Code != DenialApprovalRequired {
			d = &DeniedStep{StepID: s.StepID, Code: o.Code}
		} else if !allowed[s.StepID] {
			for _, dep := range s.DependsOn {
				if ds := index[dep]; ds != nil && blocked(ds) != nil {
					d = &DeniedStep{StepID: s.StepID, DependsOn: dep}
					break
				}
			}
		}
		why[s.StepID] = d
		return d
	}
	err := &PhaseDeniedError{Phase: phase.Phase}
	for i := range phase.Plan.Steps {
		d := blocked(&phase.Plan.Steps[i])
		if d == nil {
			return nil
		}
		err.Steps = append(err.Steps, *d)
	}
	return err
}

// endDeniedPhase fails the session's request (PhaseDeniedError) when the phase holding
// step has nothing left that can run, after a guard denied a check of step. A request
// whose phases are independent stays open: its calls do not depend on each other. A
// store failure leaves the request open, as it was before the denial; the denial
// itself is answered either way. The record is read, then the request failed: a check
// of another step of the phase allowed in between is not seen (that step's finish is
// then refused request_failed).
func (s *Session) endDeniedPhase(ctx context.Context, step string) {
	if s.unknown || s.state.PhasesIndependent {
		return
	}
	var denied *PhaseDeniedError
	_ = s.rewriteRecord(ctx, false, func(rec *ExecutionRecord) bool {
		if rec.Lifecycle == LifecycleOpen {
			denied = phaseDenied(rec, step)
		}
		return false // read only
	})
	if denied != nil {
		_ = s.Fail(ctx, denied)
	}
}
