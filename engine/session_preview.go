package engine

import (
	"context"
	"fmt"
)

// Preview answers "would this plan pass as the request's next phase now?": it reviews a
// copy of plan exactly as AfterPlanning would (the incoming plan validated against the
// generation's catalog and the request's prior steps, then the whole after_planning
// stage, the required hook included) and returns the plan the stage would accept, or
// the error AfterPlanning would return (*PlanError, *RequiredAfterPlanningError).
//
// It changes nothing: no state or record is written, the request's phase does not
// advance, no invocation is recorded (the stage runs with a nil Trail) and the observer
// is not told. Hooks do run, so a rego decision memo may answer or learn, and a hook
// panic is re-raised. Entry points use it to offer only what a plan could use, such as
// the MCP gateway's tools/list.
func (s *Session) Preview(ctx context.Context, plan *RoutingPlan) (*RoutingPlan, error) {
	if plan == nil {
		return nil, fmt.Errorf("%w: after_planning needs a plan", ErrInvalidPlan)
	}
	st := s.state
	next := *plan
	next.PhaseNumber = st.Phase + 1
	if err := ValidatePlan(&next, s.gen.Pipeline.catalog, st.PriorSteps); err != nil {
		return nil, err
	}
	ctx = WithRequestInfo(ctx, RequestInfo{ID: st.ID, Generation: s.gen.ID, Gate: NewGate(st.CacheVary, st.CacheReadDisabled)})
	pctx := &PipelineContext{Request: st.Request, Metadata: st.Metadata, Enrichments: st.Enrichments}
	return s.gen.Pipeline.AfterPlanning(ctx, pctx, &next, st.PriorSteps, nil)
}
