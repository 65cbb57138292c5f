// Package op runs around observers and guards over the operations of a turn: the turn
// itself, each inference and each tool call (guardable), and planning and synthesis
// (observe-only). A Set of Around and Guard registrations is checked and indexed once by
// Compile into an immutable *Runner, safe for concurrent use; the hot path only reads it.
//
// The runtime wraps every operation in one Start and one finish:
//
//	ctx, finish, err := runner.Start(ctx, call)
//	if finish == nil {
//		return err // invalid call (*CallError): nothing started, nothing to finish
//	}
//	if err != nil { // *Denial (the policy said no) or *GuardError (a guard broke)
//		finish(op.Result{Outcome: op.Denied, Err: err})
//		return err
//	}
//	err = run(ctx) // the operation itself, with the context Start returned
//	finish(op.Result{Outcome: outcomeOf(err), Err: err})
//
// Order. Begin callbacks run in registration order, each on its own copy of the Call and
// each receiving the context the previous one returned. Guards then run in registration
// order on fresh copies, with the final context. Finish callbacks run in reverse
// registration order, each on its own copy of the Result, and then the context bridges
// are released.
//
// Failure policy. Observers fail open: a panicking begin is logged and skipped, a nil
// context is logged and the prior one kept, a panicking finish is logged and the rest
// still run. Guards fail closed: nil allows, a validated *Denial from Deny denies, and
// any other error or a panic becomes a *GuardError; the first guard that does not allow
// stops the rest, and the operation must not run.
//
// Who calls finish. The caller of Start owns the FinishFunc and must call it once the
// operation is over, also after a denial or a guard error; only a *CallError comes with
// no FinishFunc. Extra calls, including concurrent ones, do nothing.
//
// Contexts. An observer may return any context, even a detached one. The runner keeps
// the runtime's authority: values the observer's context lacks fall back to the one it
// was given; cancellation of that context, with its cause, still reaches the operation;
// its deadline still applies, and the effective deadline is the earlier of the two. An
// observer can add values or cancel sooner, never revive a canceled operation or remove
// the runtime's deadline. A detached context costs a bridge: it is canceled by
// whichever side is canceled first, with that side's error and cause (contexts derived
// from the bridge report context.Canceled with the same context.Cause), and finish
// releases it, canceling it with cause ErrFinished. A context that shares the parent's
// cancellation, such as a value child, needs no link and finish leaves it alone.
//
// The contract is docs/semantics.md §7.
package op
