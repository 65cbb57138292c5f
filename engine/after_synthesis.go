package engine

import (
	"context"
	"errors"
)

// AfterSynthesis runs every after_synthesis hook in order, feeding each hook's response
// to the next, and returns the final response. A hook error keeps the previous
// response, is recorded (fail_open/continue/hook_error) and the next hook still runs;
// success is recorded as completed. A hook panic is recorded and re-raised with its
// original value (docs/semantics.md §5.2).
//
// A hook in warn or audit mode runs, but its rewrite is dropped (docs/semantics.md §6.9).
//
// Streaming caveat: when the caller has already streamed the synthesized text to its
// client, the rewrite only changes the stored final response; it cannot withdraw text
// already delivered. Content that must never be shown belongs in before_planning.
func (p *Pipeline) AfterSynthesis(ctx context.Context, pctx *PipelineContext, response string, trail *Trail) string {
	trail.reserve(len(p.synthesis))
	for i := range p.synthesis {
		e := &p.synthesis[i]
		inv := p.begin(ctx, e.entry, StageAfterSynthesis, i+1, 0, trail)
		next, err := callSynthesis(inv, e.hook, pctx, response)
		if errors.Is(err, ErrSkipped) {
			inv.finish(InvocationSkipped, decide(FailOpen, ActionContinue, ReasonSkipped), nil, nil)
			continue
		}
		if err != nil {
			p.logger.WarnContext(ctx, "after_synthesis hook failed; keeping previous response", "hook", e.name, "error", err)
			inv.finish(InvocationFailed, decide(FailOpen, ActionContinue, ReasonHookError), err, nil)
			continue
		}
		if e.mode.Enforcing() { // a hook in warn or audit mode rewrites nothing
			response = next
		}
		inv.finish(InvocationSucceeded, decide(FailOpen, ActionContinue, ReasonCompleted), nil, nil)
	}
	return response
}

func callSynthesis(inv invocation, h AfterSynthesisHook, pctx *PipelineContext, response string) (string, error) {
	defer func() {
		if r := recover(); r != nil {
			inv.panicked(r, FailOpen, nil)
			panic(r)
		}
	}()
	return h.AfterSynthesis(inv.ctx, pctx, response)
}
