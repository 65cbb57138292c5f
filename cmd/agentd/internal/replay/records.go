package replay

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// fromRecord returns the decisions of one execution record: its plan phases in phase
// order (each accepted plan and each rejected candidate, with the steps of the phases
// accepted before it), then its operation checks in order, each on the request's text
// and metadata. A record keeps no enrichments, nor metadata when written before records
// kept it: its decisions say they lack them.
func fromRecord(rec *engine.ExecutionRecord) *Set {
	if rec.SchemaVersion != engine.ExecutionRecordVersion {
		return &Set{Skips: []Skip{{RequestID: rec.RequestID, Reason: schemaSkip("record", rec.SchemaVersion, engine.ExecutionRecordVersion)}}}
	}
	set := &Set{Decisions: recordedPlans(rec)}
	set.Add(recordedChecks(rec))
	lacks := []string{"enrichments"}
	if rec.Metadata == nil {
		lacks = append(lacks, "metadata")
	}
	for i := range set.Decisions {
		set.Decisions[i].Lacks = lacks
	}
	return set
}

func schemaSkip(what string, got, want int) string {
	if got == 0 {
		return fmt.Sprintf("%s without a schema_version (written before versions); replay reads version %d", what, want)
	}
	return fmt.Sprintf("%s of schema version %d; replay reads version %d", what, got, want)
}

// recordedPlans are the record's plan reviews, by phase, a rejection before the
// acceptance of the same phase (an invalid plan does not end a request).
func recordedPlans(rec *engine.ExecutionRecord) []Decision {
	var out []Decision
	for _, ph := range rec.Phases {
		out = append(out, Decision{RequestID: rec.RequestID, DecisionID: phaseDecision(rec, ph.Phase), Phase: ph.Phase,
			Input: compare.Input{RequestID: rec.RequestID, Request: rec.Request, Metadata: rec.Metadata, Plan: ph.Plan}, Live: compare.Verdict{Outcome: engine.OutcomeAccepted}})
	}
	for _, rj := range rec.Rejections {
		live := compare.Verdict{Outcome: engine.OutcomeRejected, Cause: rj.Cause, Violations: rj.Violations}
		if rj.Rule != 0 {
			live = compare.Verdict{Outcome: engine.OutcomeInvalidPlan, Cause: engine.CauseInvalidPlan,
				Violations: []engine.Violation{{Code: string(rj.Code), StepID: rj.StepID}}}
		}
		out = append(out, Decision{RequestID: rec.RequestID, DecisionID: rj.DecisionID, Phase: rj.Phase,
			Input: compare.Input{RequestID: rec.RequestID, Request: rec.Request, Metadata: rec.Metadata, Plan: rj.Plan}, Live: live})
	}
	slices.SortStableFunc(out, func(a, b Decision) int {
		return cmp.Or(cmp.Compare(a.Phase, b.Phase), cmp.Compare(rank(a), rank(b)))
	})
	for i := range out {
		out[i].Input.Prior = acceptedBefore(rec, out[i].Phase)
	}
	return out
}

// rank orders the reviews of one phase: rejections first.
func rank(d Decision) int {
	if d.Live.Outcome == engine.OutcomeAccepted {
		return 1
	}
	return 0
}

// phaseDecision is the decision id of the after_planning call that accepted phase.
func phaseDecision(rec *engine.ExecutionRecord, phase int) string {
	for _, inv := range rec.PipelineHooks {
		if inv.Phase == engine.StageAfterPlanning && inv.PlanPhase == phase {
			return inv.DecisionID
		}
	}
	return ""
}

// acceptedBefore returns the steps of the phases accepted before phase.
func acceptedBefore(rec *engine.ExecutionRecord, phase int) []engine.RoutingStep {
	var steps []engine.RoutingStep
	for _, ph := range rec.Phases {
		if ph.Phase < phase && ph.Plan != nil {
			steps = append(steps, ph.Plan.Steps...)
		}
	}
	return steps
}

// recordedChecks are the record's operation checks, each bound against the accepted
// steps and the runs the checks and finishes before it left.
func recordedChecks(rec *engine.ExecutionRecord) *Set {
	set := &Set{}
	st := &engine.RequestState{ID: rec.RequestID, Request: rec.Request, Metadata: rec.Metadata, Runs: map[string]*engine.StepRun{}}
	for _, ph := range rec.Phases {
		st.Phase = max(st.Phase, ph.Phase)
		if ph.Plan != nil {
			st.PriorSteps = append(st.PriorSteps, ph.Plan.Steps...)
		}
	}
	for _, o := range rec.Operations {
		call, why := recordedCall(rec.RequestID, &o, st)
		if why != "" {
			set.Skips = append(set.Skips, Skip{RequestID: rec.RequestID, DecisionID: o.DecisionID, Reason: why})
		} else {
			snap := *st
			snap.Runs = maps.Clone(st.Runs)
			set.Decisions = append(set.Decisions, Decision{RequestID: rec.RequestID, DecisionID: o.DecisionID, Call: call, State: &snap, Live: checkVerdict(&o)})
		}
		if o.Operation == op.ToolCall && o.Outcome == engine.CheckAllow {
			run := engine.StepRun{Status: engine.RunStarted, Attempts: 1}
			if prev := st.Runs[o.StepID]; prev != nil {
				run.Attempts = prev.Attempts + 1
			}
			if f := o.Finish; f != nil {
				run.Status, run.Retryable, run.Response = f.Status, f.Retryable, f.Response
			}
			st.Runs[o.StepID] = &run
		}
	}
	return set
}

// recordedCall rebuilds a checked call from its record, or says why it cannot: a
// record keeps a tool call's identity, and its parameters only as the accepted step it
// matched under strict binding; it keeps no inference or turn call.
func recordedCall(id string, o *engine.OperationRecord, st *engine.RequestState) (op.Call, string) {
	if o.Operation != op.ToolCall {
		return op.Call{}, fmt.Sprintf("the record keeps no call of %s checks", o.Operation)
	}
	call := op.Call{Operation: op.ToolCall, RequestID: id, StepID: o.StepID, Namespace: o.Namespace, AgentName: o.AgentName, Capability: o.Capability}
	step := acceptedStep(st, o.StepID)
	if o.Binding != engine.BindingStrict || step == nil || o.Code == engine.CodePlanMismatch {
		return op.Call{}, fmt.Sprintf("the record keeps no parameters of tool call %s (binding %q, outcome %s %s)", o.StepID, o.Binding, o.Outcome, o.Code)
	}
	call.Parameters = step.Parameters()
	return call, ""
}

func acceptedStep(st *engine.RequestState, id string) *engine.RoutingStep {
	for i := range st.PriorSteps {
		if st.PriorSteps[i].StepID == id {
			return &st.PriorSteps[i]
		}
	}
	return nil
}

// checkVerdict is the live verdict a check's record states.
func checkVerdict(o *engine.OperationRecord) compare.Verdict {
	switch o.Outcome {
	case engine.CheckDeny:
		v := compare.Verdict{Outcome: engine.OutcomeDenied, Cause: engine.CauseGuardDenied, Denial: &op.Denial{Code: o.Code, Reason: o.Reason}}
		if o.Guard == engine.BindingGuard {
			v.Cause = engine.CauseBindingDenied
		}
		return v
	case engine.CheckGuardError:
		return compare.Verdict{Outcome: engine.OutcomeGuardError, Cause: engine.CauseGuardError}
	}
	return compare.Verdict{Outcome: engine.OutcomeAllowed}
}
