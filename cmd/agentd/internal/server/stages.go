package server

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// BeforePlanning opens the request (replacing any earlier request with the same id) on
// the live generation and runs before_planning. An accepted short circuit completes
// the request's record.
func (s *Service) BeforePlanning(ctx context.Context, req *BeforePlanningRequest) (*BeforePlanningResponse, *APIError) {
	if req.Request == nil {
		return nil, missing("request")
	}
	c, apiErr := s.begin(ctx, engine.StageBeforePlanning, req.RequestID, true, req.Request, req.Metadata)
	if apiErr != nil {
		return nil, apiErr
	}
	c.state.CacheVary, c.state.CacheReadDisabled = req.CacheVary, req.CacheReadDisabled
	var resp *BeforePlanningResponse
	apiErr = s.guard(c, func() *APIError {
		gate := engine.NewGate(req.CacheVary, req.CacheReadDisabled)
		out, err := c.gen.Pipeline.BeforePlanning(c.ctx, c.pctx, gate, c.trail)
		if err != nil {
			s.fail(c, err)
			return apiError(http.StatusInternalServerError, TypeHookContract, "%v", err)
		}
		resp = &BeforePlanningResponse{
			RequestID: c.state.ID, Generation: c.gen.ID, Enrichments: c.pctx.Enrichments,
			Rendered: engine.RenderEnrichments(c.pctx.Enrichments),
		}
		finish := func(*engine.ExecutionRecord) {}
		if out != nil {
			resp.ShortCircuit = &ShortCircuitBody{
				Response: out.ShortCircuit.Response, Source: out.ShortCircuit.Source, Kind: out.Kind,
				Reason: out.Reason, Hook: out.Hook, Confidence: out.Response.Confidence, Metadata: out.Response.Metadata,
			}
			finish = func(rec *engine.ExecutionRecord) {
				rec.Status, rec.FinalResponse, rec.FinalResponseSource = engine.RecordSucceeded, out.ShortCircuit.Response, engine.SourceShortCircuit
			}
		}
		if apiErr := s.commit(c, true, finish); apiErr != nil {
			return apiErr
		}
		resp.Invocations = c.recorded()
		s.observe(c, outcomeOf(out != nil, "short_circuit", "continue"))
		return nil
	})
	return resp, apiErr
}

// AfterPlanning validates one phase's incoming plan and runs after_planning on it. An
// invalid plan is a 422 naming the SPEC §2 rule; a required-hook rejection is a 403
// naming the hook, the reason and the policy's violations, and fails the record.
//
// A call that re-sends the last accepted phase's plan (its plan_id and at least one of
// its step ids, with no other phase number) is answered from the record as it was the
// first time, without running the hooks again: a network retry or a replayed body gets
// the same answer instead of a repeated-step-id error, and changes nothing.
func (s *Service) AfterPlanning(ctx context.Context, req *AfterPlanningRequest) (*AfterPlanningResponse, *APIError) {
	if req.Plan == nil {
		return nil, missing("plan")
	}
	c, apiErr := s.begin(ctx, engine.StageAfterPlanning, req.RequestID, false, req.Request, req.Metadata)
	if apiErr != nil {
		return nil, apiErr
	}
	plan, st := req.Plan, c.state
	if resent(st, req) {
		if resp := s.replayPhase(c); resp != nil {
			return resp, nil
		}
	}
	switch {
	case req.Phase > 0:
		plan.PhaseNumber = req.Phase
	case plan.PhaseNumber == 0:
		plan.PhaseNumber = st.Phase + 1
	}
	planID := plan.PlanID
	if err := engine.ValidatePlan(plan, c.gen.Catalog, st.PriorSteps); err != nil {
		pe, _ := engine.AsPlanError(err)
		s.observe(c, "invalid_plan")
		e := apiError(http.StatusUnprocessableEntity, TypeInvalidPlan, "%v", err)
		if pe != nil {
			e.with("rule", pe.Rule).with("code", pe.Code).with("step_id", pe.StepID)
		}
		return nil, e
	}
	var resp *AfterPlanningResponse
	apiErr = s.guard(c, func() *APIError {
		accepted, err := c.gen.Pipeline.AfterPlanning(c.ctx, c.pctx, plan, st.PriorSteps, c.trail)
		if err != nil {
			return s.rejectPlan(c, err)
		}
		st.PhaseStart, st.PhasePlanID = len(st.PriorSteps), planID
		st.PriorSteps = append(st.PriorSteps, accepted.Steps...)
		st.Phase = accepted.PhaseNumber
		if apiErr := s.commit(c, true, func(rec *engine.ExecutionRecord) {
			rec.Phases = append(rec.Phases, engine.PhaseRecord{Phase: accepted.PhaseNumber, Plan: accepted})
		}); apiErr != nil {
			return apiErr
		}
		resp = &AfterPlanningResponse{RequestID: c.state.ID, Generation: c.gen.ID, Plan: accepted, Invocations: c.recorded()}
		s.observe(c, "accepted")
		return nil
	})
	return resp, apiErr
}

// resent reports whether req re-sends the last accepted phase's plan: the same plan_id,
// a step id of that phase (a new phase could not reuse one), and no other phase number.
func resent(st *store.RequestState, req *AfterPlanningRequest) bool {
	p := req.Plan
	if st.Phase == 0 || p.PlanID == "" || p.PlanID != st.PhasePlanID ||
		req.Phase != 0 && req.Phase != st.Phase || p.PhaseNumber != 0 && p.PhaseNumber != st.Phase {
		return false
	}
	last := st.PriorSteps[min(st.PhaseStart, len(st.PriorSteps)):]
	return slices.ContainsFunc(p.Steps, func(in engine.RoutingStep) bool {
		return slices.ContainsFunc(last, func(done engine.RoutingStep) bool { return done.StepID == in.StepID })
	})
}

// replayPhase answers a re-sent plan with the last phase's accepted plan and review from
// the record, or returns nil when the record no longer has them.
func (s *Service) replayPhase(c *call) *AfterPlanningResponse {
	rec, err := s.cfg.Records.Get(c.ctx, c.state.ID)
	if err != nil || len(rec.Phases) == 0 || rec.Phases[len(rec.Phases)-1].Phase != c.state.Phase {
		return nil
	}
	phase := rec.Phases[len(rec.Phases)-1]
	invocations := []engine.Invocation{}
	for _, inv := range rec.PipelineHooks {
		if inv.Phase == engine.StageAfterPlanning && inv.PlanPhase == phase.Phase {
			invocations = append(invocations, inv)
		}
	}
	s.observe(c, "replayed")
	return &AfterPlanningResponse{RequestID: c.state.ID, Generation: c.gen.ID, Plan: phase.Plan, Invocations: invocations}
}

// rejectPlan fails the record of a required rejection and builds the 403.
func (s *Service) rejectPlan(c *call, err error) *APIError {
	s.fail(c, err)
	s.observe(c, "rejected")
	e := apiError(http.StatusForbidden, TypeRequiredAfterPlanning, "%v", err)
	violations := []map[string]string{}
	if r, ok := engine.AsRequiredAfterPlanningError(err); ok {
		e.with("hook", r.Hook).with("reason", r.Reason)
	}
	if rej, ok := builtin.AsPlanRejection(err); ok {
		for _, v := range rej.Violations {
			entry := map[string]string{"code": v.Code, "message": v.Message}
			if v.StepID != "" {
				entry["step_id"] = v.StepID
			}
			violations = append(violations, entry)
		}
	}
	return e.with("violations", violations)
}

// fail records a failed request with this call's invocations.
func (s *Service) fail(c *call, err error) {
	_ = s.commit(c, true, func(rec *engine.ExecutionRecord) { failRecord(rec, err) })
}

// AfterExecution runs the observe-only after_execution hooks and records the result.
func (s *Service) AfterExecution(ctx context.Context, req *AfterExecutionRequest) (*AfterExecutionResponse, *APIError) {
	if req.Result == nil {
		return nil, missing("result")
	}
	c, apiErr := s.begin(ctx, engine.StageAfterExecution, req.RequestID, false, nil, nil)
	if apiErr != nil {
		return nil, apiErr
	}
	var resp *AfterExecutionResponse
	apiErr = s.guard(c, func() *APIError {
		c.gen.Pipeline.AfterExecution(c.ctx, c.pctx, req.Result, c.trail)
		if apiErr := s.commit(c, true, func(rec *engine.ExecutionRecord) {
			rec.Result = req.Result
			attachResults(rec, req.Result)
		}); apiErr != nil {
			return apiErr
		}
		resp = &AfterExecutionResponse{RequestID: c.state.ID, Generation: c.gen.ID, Invocations: c.recorded()}
		s.observe(c, "completed")
		return nil
	})
	return resp, apiErr
}

// attachResults files each step result under the phase whose plan has that step.
func attachResults(rec *engine.ExecutionRecord, result *engine.ExecutionResult) {
	for i := range rec.Phases {
		ph := &rec.Phases[i]
		ph.Results = ph.Results[:0]
		for _, r := range result.Steps {
			for _, st := range ph.Plan.Steps {
				if st.StepID == r.StepID {
					ph.Results = append(ph.Results, r)
				}
			}
		}
	}
}

// AfterSynthesis runs the chained after_synthesis hooks and completes the record with
// the final response.
func (s *Service) AfterSynthesis(ctx context.Context, req *AfterSynthesisRequest) (*AfterSynthesisResponse, *APIError) {
	if req.Response == nil {
		return nil, missing("response")
	}
	c, apiErr := s.begin(ctx, engine.StageAfterSynthesis, req.RequestID, false, nil, nil)
	if apiErr != nil {
		return nil, apiErr
	}
	var resp *AfterSynthesisResponse
	apiErr = s.guard(c, func() *APIError {
		final := c.gen.Pipeline.AfterSynthesis(c.ctx, c.pctx, *req.Response, c.trail)
		if apiErr := s.commit(c, true, func(rec *engine.ExecutionRecord) {
			if rec.Status != engine.RecordFailed {
				rec.Status = engine.RecordSucceeded
			}
			rec.FinalResponse, rec.FinalResponseSource = final, engine.SourceAfterSynthesis
		}); apiErr != nil {
			return apiErr
		}
		resp = &AfterSynthesisResponse{RequestID: c.state.ID, Generation: c.gen.ID, Response: final, Invocations: c.recorded()}
		c.response = final
		s.observe(c, "completed")
		return nil
	})
	return resp, apiErr
}

// CheckOperation runs the guards on one call. A denial or a guard error (fail closed)
// is a 403; an invalid call a 400. The call runs on its request's generation when the
// request is known, else on the live one.
func (s *Service) CheckOperation(ctx context.Context, req *OperationCheckRequest) (*OperationCheckResponse, *APIError) {
	if req.Call == nil {
		return nil, missing("call")
	}
	call := *req.Call
	if call.Operation == "" {
		call.Operation = req.Operation
	}
	gen := s.cfg.Registry.Current()
	if call.RequestID != "" {
		if st, ok, err := s.cfg.Requests.GetRequest(ctx, call.RequestID); err != nil {
			return nil, storeError(err)
		} else if ok {
			if g := s.cfg.Registry.Get(st.Generation); g != nil {
				gen = g
			}
		}
	}
	if gen == nil {
		return nil, apiError(http.StatusServiceUnavailable, TypeNotReady, "no config generation is live")
	}
	_, finish, err := gen.Runner.Start(ctx, call)
	var callErr *op.CallError
	if errors.As(err, &callErr) {
		s.tel.operation(ctx, call.Operation, "invalid")
		return nil, apiError(http.StatusBadRequest, TypeInvalidCall, "%v", err).with("field", "call."+callErr.Field)
	}
	outcome := op.Completed
	if err != nil {
		outcome = op.Denied
	}
	finish(op.Result{Call: call, Outcome: outcome, Err: err})
	if d, ok := op.AsDenial(err); ok {
		s.tel.operation(ctx, call.Operation, "denied")
		return &OperationCheckResponse{Denial: d, PolicyRevision: gen.PolicyRevision}, nil
	}
	if err != nil {
		s.tel.operation(ctx, call.Operation, "guard_error")
		e := apiError(http.StatusForbidden, TypeGuardError, "%v", err).with("allowed", false)
		if ge, ok := op.AsGuardError(err); ok {
			e.with("guard", ge.Guard).with("operation", ge.Operation)
		}
		return nil, e
	}
	s.tel.operation(ctx, call.Operation, "allowed")
	return &OperationCheckResponse{Allowed: true, PolicyRevision: gen.PolicyRevision}, nil
}

// Execution returns the stored record of a request.
func (s *Service) Execution(ctx context.Context, id string) (*engine.ExecutionRecord, *APIError) {
	rec, err := s.cfg.Records.Get(ctx, id)
	switch {
	case errors.Is(err, engine.ErrRecordNotFound):
		return nil, apiError(http.StatusNotFound, TypeNotFound, "no execution record for request %q", id)
	case err != nil:
		return nil, storeError(err)
	}
	return rec, nil
}

func outcomeOf(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}
