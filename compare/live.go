package compare

import "github.com/agentd-dev/agentd/engine"

// Staged is the verdict of a finished stage call.
func Staged(r *engine.StageReport) Verdict {
	switch {
	case r.Outcome == engine.OutcomeInvalidPlan:
		return planError(r.Err)
	case r.Stage == engine.StageAfterSynthesis && r.Outcome == engine.OutcomeCompleted:
		return synthesized(r.Response)
	}
	return Verdict{Outcome: r.Outcome, Cause: r.Cause, Violations: r.Violations}
}

// Checked is the verdict of a finished operation check.
func Checked(r *engine.CheckReport) Verdict { return checkVerdict(r.Err) }

// StageInput is what a finished stage call ran on.
func StageInput(r *engine.StageReport) Input {
	return Input{RequestID: r.RequestID, Request: r.Request, Metadata: r.Metadata, Enrichments: r.Enrichments, Phase: r.Phase, Failed: r.Failed,
		Plan: r.Plan, Prior: r.PriorSteps, Draft: r.Draft}
}
