package server

import (
	"context"

	"github.com/agentd-dev/agentd/api"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/policy"
)

// BeforePlanning opens the request (replacing any earlier request with the same id) on
// the live generation and runs before_planning.
func (s *Service) BeforePlanning(ctx context.Context, req *api.BeforePlanningRequest) (*api.BeforePlanningResponse, *api.Error) {
	switch {
	case req.Request == nil:
		return nil, missing("request")
	case req.RequestID == "":
		return nil, missing("request_id")
	}
	sess, err := s.driver.Open(ctx, req.RequestID, engine.Opening{
		Text: *req.Request, Metadata: req.Metadata, CacheVary: req.CacheVary, CacheReadDisabled: req.CacheReadDisabled,
	})
	if err != nil {
		return nil, api.ErrorOf(err)
	}
	out, err := sess.BeforePlanning(ctx)
	if err != nil {
		return nil, decided(ctx, api.ErrorOf(err))
	}
	resp := &api.BeforePlanningResponse{
		DecisionID: out.DecisionID, Warnings: out.Warnings, RequestID: req.RequestID, Generation: sess.Generation().ID, Enrichments: out.Enrichments,
		Rendered: engine.RenderEnrichments(out.Enrichments), Invocations: out.Invocations,
	}
	if sc := out.ShortCircuit; sc != nil {
		resp.ShortCircuit = &api.ShortCircuitBody{
			Response: sc.ShortCircuit.Response, Source: sc.ShortCircuit.Source, Kind: sc.Kind,
			Reason: string(sc.Reason), Hook: sc.Hook, Confidence: sc.Response.Confidence, Metadata: sc.Response.Metadata,
		}
	}
	return resp, nil
}

// AfterPlanning reviews one phase's plan. An invalid plan is a 422 naming the plan rule;
// a required-hook rejection is a 403 naming the hook, the reason and the policy's
// violations. With req.Explain, every Rego evaluation of the call is traced (bypassing
// decision memos) and its explanation is in the answer, the 403 included.
func (s *Service) AfterPlanning(ctx context.Context, req *api.AfterPlanningRequest) (*api.AfterPlanningResponse, *api.Error) {
	if req.Plan == nil {
		return nil, missing("plan")
	}
	sess, apiErr := s.resume(ctx, engine.StageAfterPlanning, req.RequestID, req.Request, req.Metadata)
	if apiErr != nil {
		return nil, apiErr
	}
	var explainer *policy.Explainer
	if req.Explain {
		explainer = policy.NewExplainer()
		ctx = explainer.Context(ctx)
	}
	out, err := sess.AfterPlanning(ctx, req.Plan, req.Phase)
	if _, ok := engine.AsRequiredAfterPlanningError(err); ok {
		e := api.ErrorOf(err)
		if explainer != nil {
			e.With("explanation", explainer.Explanations())
		}
		return nil, decided(ctx, e)
	}
	if err != nil {
		return nil, decided(ctx, api.ErrorOf(err))
	}
	resp := &api.AfterPlanningResponse{DecisionID: out.DecisionID, Warnings: out.Warnings, RequestID: req.RequestID, Generation: sess.Generation().ID, Plan: out.Plan, Invocations: out.Invocations}
	if explainer != nil {
		resp.Explanation = explainer.Explanations()
	}
	return resp, nil
}

// decided names the call's decision in an error answered after the driver decided.
func decided(ctx context.Context, e *api.Error) *api.Error {
	if id, ok := engine.DecisionIDFrom(ctx); ok {
		e.With("decision_id", id)
	}
	return e
}

// resume loads the request of a stage call, or opens it from the call's text and
// metadata when it is unknown.
func (s *Service) resume(ctx context.Context, stage engine.Stage, id string, text *string, metadata map[string]any) (*engine.Session, *api.Error) {
	if id == "" {
		return nil, missing("request_id")
	}
	o := engine.Opening{Metadata: metadata}
	if text != nil {
		o.Text = *text
	}
	sess, err := s.driver.Resume(ctx, stage, id, o)
	if err != nil {
		return nil, api.ErrorOf(err)
	}
	return sess, nil
}

// AfterExecution runs the observe-only after_execution hooks and records the result.
func (s *Service) AfterExecution(ctx context.Context, req *api.AfterExecutionRequest) (*api.AfterExecutionResponse, *api.Error) {
	if req.Result == nil {
		return nil, missing("result")
	}
	sess, apiErr := s.resume(ctx, engine.StageAfterExecution, req.RequestID, nil, nil)
	if apiErr != nil {
		return nil, apiErr
	}
	out, err := sess.AfterExecution(ctx, req.Result)
	if err != nil {
		return nil, decided(ctx, api.ErrorOf(err))
	}
	return &api.AfterExecutionResponse{DecisionID: out.DecisionID, Warnings: out.Warnings, RequestID: req.RequestID, Generation: sess.Generation().ID, Invocations: out.Invocations}, nil
}

// AfterSynthesis runs the chained after_synthesis hooks and completes the request.
func (s *Service) AfterSynthesis(ctx context.Context, req *api.AfterSynthesisRequest) (*api.AfterSynthesisResponse, *api.Error) {
	if req.Response == nil {
		return nil, missing("response")
	}
	sess, apiErr := s.resume(ctx, engine.StageAfterSynthesis, req.RequestID, nil, nil)
	if apiErr != nil {
		return nil, apiErr
	}
	out, err := sess.AfterSynthesis(ctx, *req.Response)
	if err != nil {
		return nil, decided(ctx, api.ErrorOf(err))
	}
	return &api.AfterSynthesisResponse{DecisionID: out.DecisionID, Warnings: out.Warnings, RequestID: req.RequestID, Generation: sess.Generation().ID, Response: out.Response, Invocations: out.Invocations}, nil
}

// CheckOperation asks the guards about one call. A denial or a guard error (fail
// closed) is a 403; an invalid call a 400.
func (s *Service) CheckOperation(ctx context.Context, req *api.OperationCheckRequest) (*api.OperationCheckResponse, *api.Error) {
	if req.Call == nil {
		return nil, missing("call")
	}
	call := *req.Call
	if call.Operation == "" {
		call.Operation = req.Operation
	}
	out, err := s.driver.Check(ctx, call)
	if _, ok := op.AsGuardError(err); ok {
		return nil, decided(ctx, api.ErrorOf(err))
	}
	if err != nil {
		return nil, api.ErrorOf(err)
	}
	return &api.OperationCheckResponse{DecisionID: out.DecisionID, Warnings: out.Warnings, Allowed: out.Allowed, Denial: out.Denial, Approval: api.RefOf(out.Approval), PolicyRevision: out.PolicyRevision, Binding: out.Binding}, nil
}

// FinishOperation reports how a checked tool_call step ended (see engine.Driver.Finish).
func (s *Service) FinishOperation(ctx context.Context, req *api.OperationFinishRequest) (*api.OperationFinishResponse, *api.Error) {
	switch {
	case req.RequestID == "":
		return nil, missing("request_id")
	case req.StepID == "":
		return nil, missing("step_id")
	case req.Status == "":
		return nil, missing("status")
	}
	err := s.driver.Finish(ctx, engine.Finish{
		RequestID: req.RequestID, StepID: req.StepID, Status: req.Status, Retryable: req.Retryable,
		Response: req.Response, Error: req.Error, Duration: req.Duration,
	})
	if err != nil {
		return nil, api.ErrorOf(err)
	}
	return &api.OperationFinishResponse{RequestID: req.RequestID, StepID: req.StepID, Status: req.Status}, nil
}

// UpdateEffect completes or updates a pending effect by id (see
// engine.Driver.CompleteEffect).
func (s *Service) UpdateEffect(ctx context.Context, req *api.EffectUpdateRequest) (*api.EffectUpdateResponse, *api.Error) {
	switch {
	case req.RequestID == "":
		return nil, missing("request_id")
	case req.EffectID == "":
		return nil, missing("effect_id")
	case req.Status == "":
		return nil, missing("status")
	}
	err := s.driver.CompleteEffect(ctx, req.RequestID, engine.Effect{
		EffectID: req.EffectID, Name: req.Name, Status: req.Status, Summary: req.Summary,
		Data: req.Data, Error: req.Error, Duration: req.Duration,
	})
	if err != nil {
		return nil, api.ErrorOf(err)
	}
	return &api.EffectUpdateResponse{RequestID: req.RequestID, EffectID: req.EffectID, Status: req.Status}, nil
}
