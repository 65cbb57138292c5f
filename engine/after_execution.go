package engine

import (
	"context"
	"errors"
)

// AfterExecution runs every after_execution hook, in order, with the combined result
// of all phases. The stage is observe-only: hooks receive the caller's result and must
// treat it as read-only. A hook error is recorded (fail_open/continue/hook_error) and
// the next hook runs; success is recorded as completed. A hook panic is recorded and
// re-raised with its original value (docs/semantics.md §5.1).
func (p *Pipeline) AfterExecution(ctx context.Context, pctx *PipelineContext, result *ExecutionResult, trail *Trail) {
	trail.reserve(len(p.execution))
	for i := range p.execution {
		e := &p.execution[i]
		inv := p.begin(ctx, e.entry, StageAfterExecution, i+1, 0, trail)
		err := callExecution(inv, e.hook, pctx, result)
		if errors.Is(err, ErrSkipped) {
			inv.finish(InvocationSkipped, decide(FailOpen, ActionContinue, ReasonSkipped), nil, nil)
			continue
		}
		if err != nil {
			p.logger.WarnContext(ctx, "after_execution hook failed; continuing", "hook", e.name, "error", err)
			inv.finish(InvocationFailed, decide(FailOpen, ActionContinue, ReasonHookError), err, nil)
			continue
		}
		inv.finish(InvocationSucceeded, decide(FailOpen, ActionContinue, ReasonCompleted), nil, nil)
	}
}

func callExecution(inv invocation, h AfterExecutionHook, pctx *PipelineContext, result *ExecutionResult) error {
	defer func() {
		if r := recover(); r != nil {
			inv.panicked(r, FailOpen, nil)
			panic(r)
		}
	}()
	return h.AfterExecution(inv.ctx, pctx, result)
}
