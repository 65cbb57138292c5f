package engine

import (
	"context"
	"errors"
)

// Hook is the base of every pipeline hook. Name identifies it in records, logs and span
// names (pipeline.hook.<stage>.<name>). A hook takes part in a stage by implementing
// that stage's interface; the runners discover stages by type assertion, so a hook may
// implement any subset.
type Hook interface {
	Name() string
}

// BeforePlanningHook enriches the context and may return a legacy short circuit, which
// is treated as authoritative. Return (nil, nil) to carry on.
type BeforePlanningHook interface {
	Hook
	BeforePlanning(ctx context.Context, pctx *PipelineContext) (*ShortCircuit, error)
}

// BeforePlanningDecisionHook is the provenance-aware form of BeforePlanningHook. When a
// hook implements both, the decision form is used.
type BeforePlanningDecisionHook interface {
	Hook
	BeforePlanningDecision(ctx context.Context, pctx *PipelineContext, gate Gate) (*ShortCircuitDecision, error)
}

// AfterPlanningHook reviews and may rewrite the plan of one phase. It receives a deep
// copy it may mutate and must return a non-nil plan; the returned plan is revalidated
// before it replaces the previous one.
type AfterPlanningHook interface {
	Hook
	AfterPlanning(ctx context.Context, pctx *PipelineContext, plan *RoutingPlan) (*RoutingPlan, error)
}

// PlanReader is implemented by an after_planning hook that may declare it never mutates
// the plan it is given: it returns that same plan (accepted as it is) or a new one. For
// such a hook the runner skips the defensive copy and, when the same plan comes back,
// the revalidation of a plan that is already valid. A hook that reports true and then
// mutates its input breaks the copy-on-write guarantee; report false when unsure.
type PlanReader interface {
	ReadsPlanOnly() bool
}

// RequiredAfterPlanningHook marks the single after_planning hook whose failure of any
// kind stops the phase (fail closed). The same value must implement AfterPlanningHook
// and be the last after_planning hook; New enforces both.
type RequiredAfterPlanningHook interface {
	Hook
	RequireAfterPlanningSuccess()
}

// AfterExecutionHook observes the combined execution result. It cannot change it;
// errors are recorded and ignored (fail open).
type AfterExecutionHook interface {
	Hook
	AfterExecution(ctx context.Context, pctx *PipelineContext, result *ExecutionResult) error
}

// AfterSynthesisHook rewrites the synthesized response; hooks chain in order. On the
// streaming path the rewrite cannot withdraw text already delivered to the client, so
// content that must never be shown belongs in before_planning instead.
type AfterSynthesisHook interface {
	Hook
	AfterSynthesis(ctx context.Context, pctx *PipelineContext, response string) (string, error)
}

// ErrSkipped is returned by a hook that chose not to take part in this call (for
// example because its condition is false). The invocation is recorded as skipped with
// decision <policy>/continue/skipped and nothing else changes. The required
// after-planning hook cannot skip: from it, ErrSkipped is a failure like any error.
var ErrSkipped = errors.New("hook skipped")

// Gate is the cache-read gate a decision hook sees: the reserved variation dimensions
// of the current request and whether cache reads are disabled. A Gate is a read-only
// value: its map is never exposed (CacheVary returns a copy), so every hook in effect
// sees its own copy and cannot change what the next one sees.
type Gate struct {
	vary         map[string]string
	readDisabled bool
}

// NewGate returns a gate over a copy of vary.
func NewGate(vary map[string]string, readDisabled bool) Gate {
	return Gate{vary: cloneStrings(vary), readDisabled: readDisabled}
}

// CacheVary returns a copy of the current variation map.
func (g Gate) CacheVary() map[string]string { return cloneStrings(g.vary) }

// ResponseCacheReadDisabled reports whether cached answers must not be served.
func (g Gate) ResponseCacheReadDisabled() bool { return g.readDisabled }

func cloneStrings(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
