package engine

import (
	"context"

	"github.com/agentd-dev/agentd/engine/op"
)

// Verdict returns what g's plan binding and guards decide of call against st, the
// request's state (nil for a request the driver does not know), writing nothing and
// beginning no operation observer, the guards seeing st's request and metadata as
// Driver.Check gives them: nil (allowed), a *op.Denial (plan binding, with one
// of its codes, or a guard) or a *op.GuardError; a malformed call is a *op.CallError.
// It asks another generation than the request's what it would have decided (a shadow
// configuration, a replay); Driver.Check is how a call is checked.
func (g *Generation) Verdict(ctx context.Context, st *RequestState, call op.Call) error {
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
