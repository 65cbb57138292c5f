package engine

import (
	"context"
	"fmt"
)

// WhatIf is the request a plan is evaluated for without running it: the request's
// text, metadata and enrichments, the steps of the phases accepted before (Prior) and
// their count (Phase), whether it failed, its cache dimensions, and the labels and
// history it reported (Flow, nil for none: §8.19). The maps and steps are only read.
type WhatIf struct {
	RequestID         string
	Request           string
	Metadata          map[string]any
	Enrichments       map[string]any
	Prior             []RoutingStep
	Phase             int
	Failed            bool
	CacheVary         map[string]string
	CacheReadDisabled bool
	Flow              *Flow
}

// info is the request context the hooks of a call on w see: the one the driver gives
// a stage call of the request (Session.begin).
func (w *WhatIf) info(gen string) RequestInfo {
	return RequestInfo{ID: w.RequestID, Generation: gen, Gate: NewGate(w.CacheVary, w.CacheReadDisabled), Phase: w.Phase, Failed: w.Failed, Flow: w.Flow}
}

// Context returns ctx carrying the request context the hooks of g see in a what-if
// call on w (RequestInfoFrom), for the other stages a comparison evaluates.
func (w WhatIf) Context(ctx context.Context, g *Generation) context.Context {
	return WithRequestInfo(ctx, w.info(g.ID))
}

// EvaluatePlan answers "would this plan pass as w's next phase on g?", the one
// what-if path of plan review (the MCP gateway's tools/list through Session.Evaluate,
// replay and shadow comparisons, probes): it reviews a copy of plan exactly as
// Session.AfterPlanning would, with the same request context and g's own plan limits
// and catalog (plan validation against w.Prior, then the whole after_planning stage,
// the required hook included), and returns the plan the stage would accept, or the
// error AfterPlanning would return (*PlanError, *RequiredAfterPlanningError).
//
// It changes nothing: no state or record is written and no invocation is recorded
// (the stage runs with a nil Trail). Hooks do run, so a rego decision memo may answer
// or learn, and a hook panic is re-raised.
func (g *Generation) EvaluatePlan(ctx context.Context, w WhatIf, plan *RoutingPlan) (*RoutingPlan, error) {
	if plan == nil {
		return nil, fmt.Errorf("%w: after_planning needs a plan", ErrInvalidPlan)
	}
	next := *plan
	next.PhaseNumber = w.Phase + 1
	if err := g.Pipeline.ValidatePlan(&next, w.Prior); err != nil {
		return nil, err
	}
	pctx := &PipelineContext{Request: w.Request, Metadata: w.Metadata, Enrichments: w.Enrichments}
	return g.Pipeline.AfterPlanning(w.Context(ctx, g), pctx, &next, w.Prior, nil)
}

// Evaluate is Generation.EvaluatePlan on the session's request as it stands and on
// its generation: what AfterPlanning would answer for plan as the next phase now,
// changing nothing. The session's request is not advanced; entry points use it to
// offer only what a plan could use, such as the MCP gateway's tools/list.
func (s *Session) Evaluate(ctx context.Context, plan *RoutingPlan) (*RoutingPlan, error) {
	return s.gen.EvaluatePlan(ctx, s.whatIf(), plan)
}

// whatIf is the session's request as a WhatIf.
func (s *Session) whatIf() WhatIf {
	st := s.state
	return WhatIf{RequestID: st.ID, Request: st.Request, Metadata: st.Metadata, Enrichments: st.Enrichments, Prior: st.PriorSteps,
		Phase: st.Phase, Failed: st.Lifecycle == LifecycleFailed, CacheVary: st.CacheVary, CacheReadDisabled: st.CacheReadDisabled,
		Flow: &Flow{Labels: st.Labels, History: st.History}}
}
