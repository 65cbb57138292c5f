package config

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/expr"
)

// hook is a compiled declarative hook: an optional condition, an optional timeout and
// the ordered steps. The stage types below adapt it to the engine's stage interfaces.
type hook struct {
	name    string
	when    *expr.Program
	timeout time.Duration
	steps   []builtin.Action
	// readsPlanOnly is set when no step mutates the plan in place.
	readsPlanOnly bool
	mode          engine.RuleMode
}

func (h *hook) Name() string { return h.name }

// RuleMode implements engine.Moded.
func (h *hook) RuleMode() engine.RuleMode { return h.mode }

// run runs the steps in order on s until one fails or decides. A false condition
// returns engine.ErrSkipped; a hook over its timeout fails with an error naming it.
func (h *hook) run(ctx context.Context, s *builtin.State) error {
	s.Info, _ = engine.RequestInfoFrom(ctx)
	if h.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.timeout)
		defer cancel()
	}
	if h.when != nil {
		ok, err := h.when.EvalBool(ctx, s.Vars())
		if err != nil {
			return fmt.Errorf("when: %w", err)
		}
		if !ok {
			return engine.ErrSkipped
		}
	}
	for _, step := range h.steps {
		if err := step.Run(ctx, s); err != nil {
			if h.timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("hook timed out after %s: %w", h.timeout, err)
			}
			return err
		}
		if s.Decision != nil {
			return nil
		}
	}
	return nil
}

// statePool recycles States between invocations: a State belongs to one invocation
// and no action keeps it, so each is zeroed and reused once its hook returned.
var statePool = sync.Pool{New: func() any { return new(builtin.State) }}

func newState(stage engine.Stage, pctx *engine.PipelineContext) *builtin.State {
	s := statePool.Get().(*builtin.State)
	s.Stage, s.Pctx = stage, pctx
	return s
}

func releaseState(s *builtin.State) {
	*s = builtin.State{}
	statePool.Put(s)
}

type beforeHook struct{ *hook }

func (h beforeHook) BeforePlanningDecision(ctx context.Context, pctx *engine.PipelineContext, _ engine.Gate) (*engine.ShortCircuitDecision, error) {
	s := newState(engine.StageBeforePlanning, pctx)
	defer releaseState(s)
	err := h.run(ctx, s)
	return s.Decision, err
}

type afterHook struct{ *hook }

func (h afterHook) AfterPlanning(ctx context.Context, pctx *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
	s := newState(engine.StageAfterPlanning, pctx)
	defer releaseState(s)
	s.Plan = plan
	if err := h.run(ctx, s); err != nil {
		return nil, err
	}
	return s.Plan, nil
}

// ReadsPlanOnly implements engine.PlanReader: true when no step changes the plan in
// place (a rego decision's rewritten plan is a new value).
func (h afterHook) ReadsPlanOnly() bool { return h.readsPlanOnly }

type requiredHook struct{ afterHook }

func (requiredHook) RequireAfterPlanningSuccess() {}

type executionHook struct{ *hook }

func (h executionHook) AfterExecution(ctx context.Context, pctx *engine.PipelineContext, result *engine.ExecutionResult) error {
	s := newState(engine.StageAfterExecution, pctx)
	defer releaseState(s)
	s.Result = result
	return h.run(ctx, s)
}

type synthesisHook struct{ *hook }

func (h synthesisHook) AfterSynthesis(ctx context.Context, pctx *engine.PipelineContext, response string) (string, error) {
	s := newState(engine.StageAfterSynthesis, pctx)
	defer releaseState(s)
	s.Response = response
	if err := h.run(ctx, s); err != nil {
		return "", err
	}
	return s.Response, nil
}

// adapt returns h as the engine hook of stage.
func adapt(h *hook, stage engine.Stage, required bool) engine.Hook {
	switch stage {
	case engine.StageBeforePlanning:
		return beforeHook{h}
	case engine.StageAfterPlanning:
		if required {
			return requiredHook{afterHook{h}}
		}
		return afterHook{h}
	case engine.StageAfterExecution:
		return executionHook{h}
	default:
		return synthesisHook{h}
	}
}
