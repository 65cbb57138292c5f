package probe

import (
	"context"
	"fmt"

	"github.com/agentd-dev/agentd/engine"
)

// Ending is where a reviewed plan ended: the first of the daemon's checks that stopped it,
// or Accepted. (Its JSON member is "verdict".)
type Ending string

// Endings, in the order a plan meets them.
const (
	// RejectedWire: the API would not decode the body (an unknown member, a value of
	// the wrong JSON type for a typed field).
	RejectedWire Ending = "wire"
	// RejectedValidation: plan validation (docs/semantics.md §2) rejected the plan, or
	// the plan a hook returned.
	RejectedValidation Ending = "validation"
	// RejectedStage: the after_planning stage rejected the plan: the required hook's
	// policy denied it, or the hook failed (which fails closed).
	RejectedStage Ending = "policy"
	// RejectedGuard: the stage accepted a plan whose request starts from labels or a
	// history, but the guards deny the tool_call of one of its steps under them
	// (checked when the guards read the flow).
	RejectedGuard Ending = "guard"
	// Accepted: the whole stage accepted the plan.
	Accepted Ending = "accepted"
)

// outcome is what reviewing one case gave.
type outcome struct {
	ending Ending
	err    error
	// plan is the accepted plan (Accepted only).
	plan *engine.RoutingPlan
	// violations are the policy's violation codes (RejectedStage), or the code of the
	// guards' denial (RejectedGuard).
	violations []string
}

// review runs c through what the daemon does with an after_planning call: decoding,
// then the engine's what-if review (engine.Generation.EvaluatePlan: validation of the
// incoming plan under the generation's limits, then the after_planning stage, seeing
// the flow c's request starts from), recording nothing; for a request with a flow,
// when the guards read it, then the guards on each accepted step's call
// (guardDenial). A hook panic is a rejection (the daemon answers 500).
func (p *prober) review(ctx context.Context, c *Case) (out outcome) {
	plan, err := decodePlan(c.Plan)
	if err != nil {
		return outcome{ending: RejectedWire, err: err}
	}
	defer func() {
		if v := recover(); v != nil {
			out = outcome{ending: RejectedStage, err: fmt.Errorf("hook panic: %v", v)}
		}
	}()
	flow, err := c.flow()
	if err != nil {
		return outcome{ending: RejectedValidation, err: err}
	}
	w := engine.WhatIf{RequestID: "probe", Request: c.Request, Metadata: cloneMap(c.Metadata), Enrichments: cloneMap(c.Enrichments),
		Prior: c.Prior, Phase: max(plan.PhaseNumber-1, 0), CacheReadDisabled: true, Flow: flow}
	if w.Metadata == nil {
		w.Metadata = map[string]any{}
	}
	if w.Enrichments == nil {
		w.Enrichments = map[string]any{}
	}
	accepted, err := p.gen.EvaluatePlan(ctx, w, plan)
	if err != nil {
		r, rejected := engine.AsRequiredAfterPlanningError(err)
		if _, invalid := engine.AsPlanError(err); (invalid && !rejected) || (rejected && r.Reason == engine.ReasonInvalidPlan) {
			return outcome{ending: RejectedValidation, err: err}
		}
		out := outcome{ending: RejectedStage, err: err, violations: []string{}}
		for _, v := range engine.ViolationsOf(err) {
			out.violations = append(out.violations, v.Code)
		}
		return out
	}
	if c.flowing() && p.guardsReadFlow {
		if id, code := p.guardDenial(ctx, c, accepted, flow); id != "" {
			return outcome{ending: RejectedGuard, err: fmt.Errorf("guards deny %s: %s", id, code), plan: accepted, violations: []string{code}}
		}
	}
	return outcome{ending: Accepted, plan: accepted}
}

// escaped returns the first identity of c's accepted plan that is not allowed, or "".
// Allowed are the identities the unmutated seeds got accepted; for a request_metadata
// mutation, those the seeds with the mutated seed's own request metadata got
// accepted: a request that lacks, blanks or changes what its metadata said must not
// get more than the request that said it; for a request that starts from labels or a
// history, those the seeds with the same metadata and flow got through: a mutated
// plan must not get, under a label, what the label denied its seed.
func (p *prober) escaped(c *Case, o outcome) string {
	if o.ending != Accepted {
		return ""
	}
	allowed := p.allowed
	if c.Mutation == metadataMutation || c.flowing() {
		allowed = p.byContext[c.Context]
	}
	for _, id := range identities(o.plan) {
		if !allowed[id] {
			return id
		}
	}
	return ""
}
