package compare

import (
	"context"
	"fmt"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// Input is what a stage call ran on: the request's text, metadata and enrichments as
// the call began, its accepted phases (Phase) and whether it had failed, for
// after_planning the incoming plan (with its phase number) and the steps of the phases
// accepted before it, and for after_synthesis the draft response. The maps and the
// plan are only read.
type Input struct {
	RequestID   string
	Request     string
	Metadata    map[string]any
	Enrichments map[string]any
	Phase       int
	Failed      bool
	Plan        *engine.RoutingPlan
	Prior       []engine.RoutingStep
	Draft       string
}

// whatIf is in as the engine's what-if request, cache reads off. A plan's phase number
// names the phases accepted before it (an input read from a record or an event has no
// Phase of its own).
func (in *Input) whatIf() engine.WhatIf {
	phase := in.Phase
	if in.Plan != nil {
		phase = max(in.Plan.PhaseNumber-1, 0)
	}
	return engine.WhatIf{RequestID: in.RequestID, Request: in.Request, Metadata: in.Metadata, Enrichments: in.Enrichments,
		Prior: in.Prior, Phase: phase, Failed: in.Failed, CacheReadDisabled: true}
}

// Plan reviews in.Plan as gen's after_planning stage would, through the engine's one
// what-if path (engine.Generation.EvaluatePlan): plan validation against gen's catalog
// and limits, then every after_planning hook, the required one last. It records
// nothing.
func Plan(ctx context.Context, gen *engine.Generation, in Input) (v Verdict) {
	defer recovered(&v)
	_, err := gen.EvaluatePlan(ctx, in.whatIf(), in.Plan)
	if _, rejected := engine.AsRequiredAfterPlanningError(err); !rejected {
		if _, ok := engine.AsPlanError(err); ok {
			return planError(err)
		}
	}
	if err != nil {
		return Verdict{Outcome: engine.OutcomeRejected, Cause: engine.CauseOf(err), Violations: engine.ViolationsOf(err)}
	}
	return Verdict{Outcome: engine.OutcomeAccepted}
}

// BeforePlanning asks gen's before_planning stage about in through the engine's
// what-if path (engine.Generation.EvaluateBeforePlanning), cache reads off: it answers
// whether gen would short-circuit the request (or break the decision contract) rather
// than let planning go on.
func BeforePlanning(ctx context.Context, gen *engine.Generation, in Input) (v Verdict) {
	defer recovered(&v)
	sc, err := gen.EvaluateBeforePlanning(ctx, in.whatIf())
	switch {
	case err != nil:
		return Verdict{Outcome: engine.OutcomeHookContract, Cause: engine.CauseOf(err)}
	case sc != nil:
		return Verdict{Outcome: engine.OutcomeShortCircuit}
	}
	return Verdict{Outcome: engine.OutcomeContinue}
}

// Synthesis asks gen's after_synthesis hooks about in.Draft through the engine's
// what-if path (engine.Generation.EvaluateSynthesis), each given the previous one's
// response, and answers the final response by its digest.
func Synthesis(ctx context.Context, gen *engine.Generation, in Input) (v Verdict) {
	defer recovered(&v)
	return synthesized(gen.EvaluateSynthesis(ctx, in.whatIf(), in.Draft))
}

// Check asks gen's plan binding (against st, the request's state; nil for an unknown
// request) and guards about call, beginning no observer.
func Check(ctx context.Context, gen *engine.Generation, st *engine.RequestState, call op.Call) (v Verdict) {
	defer recovered(&v)
	return checkVerdict(gen.EvaluateCall(ctx, st, call))
}

// recovered turns a hook panic into a panic verdict.
func recovered(v *Verdict) {
	if r := recover(); r != nil {
		*v = Verdict{Outcome: engine.OutcomePanic, Cause: engine.CausePanic}
	}
}

// synthesized is the verdict of an after_synthesis call that answered final.
func synthesized(final string) Verdict {
	return Verdict{Outcome: engine.OutcomeCompleted, Response: digest(final)}
}

// planError is the verdict on a plan that broke a plan rule.
func planError(err error) Verdict {
	v := Verdict{Outcome: engine.OutcomeInvalidPlan, Cause: engine.CauseInvalidPlan}
	if pe, ok := engine.AsPlanError(err); ok {
		v.Violations = []engine.Violation{{Code: string(pe.Code), StepID: pe.StepID, Message: fmt.Sprintf("plan rule %d", pe.Rule)}}
	}
	return v
}

// checkVerdict is the verdict of a check's error (see engine.CheckOutcomeOf).
func checkVerdict(err error) Verdict {
	v := Verdict{Outcome: engine.CheckOutcomeOf(err)}
	if den, ok := op.AsDenial(err); ok {
		v.Denial, v.Cause = &op.Denial{Code: den.Code, Reason: den.Reason}, engine.CauseGuardDenied
		if bindingCode(den.Code) {
			v.Cause = engine.CauseBindingDenied
		}
	} else if _, ok := op.AsGuardError(err); ok {
		v.Cause = engine.CauseGuardError
	}
	return v
}

func bindingCode(code string) bool {
	return code == engine.CodeNotInAcceptedPlan || code == engine.CodePlanMismatch || code == engine.CodeStepAlreadyExecuted
}
