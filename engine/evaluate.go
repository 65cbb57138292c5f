package engine

import (
	"context"
	"fmt"
	"maps"

	"github.com/agentd-dev/agentd/engine/op"
)

// WhatIf is the request a plan is evaluated for without running it: the request's
// text, metadata and enrichments, the steps of the phases accepted before (Prior) and
// their count (Phase), whether it failed, its cache dimensions, and the labels and
// history it reported (Flow, nil for none: §8.21). The maps and steps are only read.
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
// a stage call of the request (Session.begin), whose Flow is never nil.
func (w *WhatIf) info(gen string) RequestInfo {
	flow := w.Flow
	if flow == nil {
		flow = &Flow{}
	}
	return RequestInfo{ID: w.RequestID, Generation: gen, Gate: NewGate(w.CacheVary, w.CacheReadDisabled), Phase: w.Phase, Failed: w.Failed, Flow: flow}
}

// requestContext returns ctx carrying the request context the hooks of g see in a
// what-if call on w (RequestInfoFrom).
func (w WhatIf) requestContext(ctx context.Context, g *Generation) context.Context {
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
	return g.Pipeline.AfterPlanning(w.requestContext(ctx, g), pctx, &next, w.Prior, nil)
}

// EvaluateBeforePlanning answers what g's before_planning stage would decide on w's
// request, the what-if path of that stage: the short circuit it would accept (nil:
// planning goes on), or the *ContractError a broken decision contract makes. The stage
// runs as Session.BeforePlanning runs it, with the same request context and cache
// gate, on a copy of w.Enrichments, so it changes nothing: no state, record or
// invocation is written. Hooks do run (a hook panic is re-raised), and w.Metadata is
// only read.
func (g *Generation) EvaluateBeforePlanning(ctx context.Context, w WhatIf) (*ShortCircuitOutcome, error) {
	pctx := &PipelineContext{Request: w.Request, Metadata: w.Metadata, Enrichments: maps.Clone(w.Enrichments)}
	return g.Pipeline.BeforePlanning(w.requestContext(ctx, g), pctx, NewGate(w.CacheVary, w.CacheReadDisabled), nil)
}

// EvaluateSynthesis answers the final response g's after_synthesis hooks would make of
// draft on w's request, the what-if path of that stage: the hooks run as
// Session.AfterSynthesis runs them, chained, with the same request context, and
// nothing is written. A hook panic is re-raised.
func (g *Generation) EvaluateSynthesis(ctx context.Context, w WhatIf, draft string) string {
	pctx := &PipelineContext{Request: w.Request, Metadata: w.Metadata, Enrichments: w.Enrichments}
	return g.Pipeline.AfterSynthesis(w.requestContext(ctx, g), pctx, draft, nil)
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

// EvaluateCall returns what g's plan binding and guards decide of call against st, the
// request's state (nil for a request the driver does not know), writing nothing and
// beginning no operation observer, the guards seeing st's request and metadata as
// Driver.Check gives them: nil (allowed), a *op.Denial (plan binding, with one
// of its codes, or a guard) or a *op.GuardError; a malformed call is a *op.CallError.
// It is the what-if path of operation checks, as EvaluatePlan is of plan review: it
// asks another generation than the request's what it would have decided (a shadow
// configuration, a replay); Driver.Check is how a call is checked.
func (g *Generation) EvaluateCall(ctx context.Context, st *RequestState, call op.Call) error {
	if err := call.Validate(); err != nil {
		return err
	}
	ofRequest(st, &call)
	if mode := g.binding(); call.Operation == op.ToolCall && mode != BindingOff {
		if den := bind(mode, st, &call); den != nil {
			return den
		}
		if g.Runner.ReadsStep(call.Operation) {
			call.Step = stepObject(acceptedStep(st, call.StepID))
		}
	}
	return g.Runner.Guard(ctx, call)
}
