package op

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"
)

// Start runs the begin and guard phases for call and returns the context the operation
// must run with, the aggregate finish, and the guards' verdict.
//
//   - An invalid call returns ctx, a nil FinishFunc and a *CallError; the operation must
//     not run and there is nothing to finish.
//   - A nil Runner, or an operation nothing is registered for, returns ctx and a no-op
//     FinishFunc.
//   - Otherwise the begin callbacks run in registration order, each on its own copy of
//     the call and each receiving the context the previous one returned. A begin that
//     panics is logged and skipped; a nil context is logged and the prior one kept.
//     Then the guards run in registration order on fresh copies; the first that does not
//     allow the operation stops the rest, and its verdict is returned: a *Denial when it
//     denied, a *GuardError when it failed or panicked. Either way the operation must
//     not run.
//
// Unless the FinishFunc is nil, the caller must call it when the operation is over,
// including after a denial or guard error. Its first call runs the recorded finish
// callbacks in reverse registration order, each with its own copy of the Result (a
// panic is logged and the rest still run), then releases the context links; later or
// concurrent calls do nothing.
func (r *Runner) Start(ctx context.Context, call Call) (context.Context, FinishFunc, error) {
	if err := call.Validate(); err != nil {
		return ctx, nil, err
	}
	e := r.entries(call.Operation)
	if e == nil || (len(e.arounds) == 0 && len(e.guards) == 0) {
		return ctx, noFinish, nil
	}
	var st *run
	var started time.Time
	if len(e.arounds) > 0 {
		started = time.Now()
	}
	for i := range e.arounds {
		a := &e.arounds[i]
		next, fin, ok := r.begin(ctx, a, call)
		if !ok || (fin == nil && same(ctx, next)) {
			continue
		}
		if st == nil {
			st = r.newRun(call, started)
		}
		ctx = st.add(a, fin, ctx, next)
	}
	var err error
	for _, g := range e.guards {
		if err = r.check(ctx, g, call); err != nil {
			break
		}
	}
	if st == nil {
		return ctx, noFinish, err
	}
	return ctx, st.finish, err
}

// ReadsStep reports whether an observer, or a guard that may read call.Step (one not
// marked IgnoresStep), takes calls of op, so that a caller can skip building a step
// that nothing would read.
func (r *Runner) ReadsStep(op Operation) bool {
	e := r.entries(op)
	if e == nil {
		return false
	}
	return len(e.arounds) > 0 || slices.ContainsFunc(e.guards, func(g guard) bool { return !g.ignoresStep })
}

// Guard runs only the guard phase for call, in registration order, and returns the
// verdict Start would: nil, a *Denial or a *GuardError (a *CallError for an invalid
// call). No observer begins or finishes, so nothing observes the call: it is for
// asking what the guards would decide (a shadow configuration, a replay) without the
// operation running.
func (r *Runner) Guard(ctx context.Context, call Call) error {
	if err := call.Validate(); err != nil {
		return err
	}
	e := r.entries(call.Operation)
	if e == nil {
		return nil
	}
	for _, g := range e.guards {
		if err := r.check(ctx, g, call); err != nil {
			return err
		}
	}
	return nil
}

// begin calls one observer; ok is false when it panicked.
func (r *Runner) begin(ctx context.Context, a *around, call Call) (next context.Context, fin FinishFunc, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			logPanic(ctx, r.logger, "begin", call.Operation, a.name, a.index, v)
			next, fin, ok = ctx, nil, false
		}
	}()
	next, fin = a.begin(ctx, call.Clone())
	if next == nil {
		logNilContext(ctx, r.logger, call.Operation, a.name, a.index)
		next = ctx
	}
	return next, fin, true
}

// check calls one guard and classifies its answer: nil, a fresh *Denial, or a
// *GuardError (an error that is not a valid denial, or a panic).
func (r *Runner) check(ctx context.Context, g guard, call Call) (err error) {
	fail := func(cause error) error {
		return &GuardError{Operation: call.Operation, Index: g.index, Guard: g.name, Cause: cause}
	}
	defer func() {
		if v := recover(); v != nil {
			logPanic(ctx, r.logger, "guard", call.Operation, g.name, g.index, v)
			err = fail(&PanicError{Value: v})
		}
	}()
	if !g.readOnly {
		call = call.Clone()
	}
	err = g.check(ctx, call)
	if err == nil {
		return nil
	}
	d, ok := AsDenial(err)
	if !ok {
		return fail(err)
	}
	if bad := validateDenial(d.Code, d.Reason); bad != nil {
		return fail(bad)
	}
	return &Denial{Code: d.Code, Reason: d.Reason}
}

// The loggers are kept out of line so the callers' frames stay small on the hot path.

//go:noinline
func logNilContext(ctx context.Context, l *slog.Logger, op Operation, name string, index int) {
	l.LogAttrs(ctx, slog.LevelWarn, "op: begin returned a nil context; keeping the prior one",
		slog.String("operation", string(op)), slog.String("callback", name), slog.Int("index", index))
}

//go:noinline
func logPanic(ctx context.Context, l *slog.Logger, phase string, op Operation, name string, index int, v any) {
	l.LogAttrs(ctx, slog.LevelError, "op: "+phase+" callback panicked",
		slog.String("operation", string(op)), slog.String("callback", name),
		slog.Int("index", index), slog.String("panic", fmt.Sprint(v)),
		slog.String("stack", string(debug.Stack())))
}
