package op

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrFinished is the cancellation cause of a bridged context once the operation's
// finish has been called.
var ErrFinished = errors.New("op: operation finished")

// shareCancellation reports whether derived is canceled exactly when parent is: same
// Done channel, same deadline. That holds for a value child of parent, and for a
// detached context when parent can never be canceled; either way joining the values
// is enough and no cancellation link is needed.
func shareCancellation(parent, derived context.Context) bool {
	pd, pok := parent.Deadline()
	dd, dok := derived.Deadline()
	return derived.Done() == parent.Done() && pok == dok && pd.Equal(dd)
}

// same compares two contexts without panicking on a non-comparable context type.
func same(a, b context.Context) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return a == b
}

// fallback is derived with parent's values behind it.
type fallback struct {
	context.Context
	parent context.Context
}

func (f *fallback) Value(key any) any {
	if v := f.Context.Value(key); v != nil {
		return v
	}
	return f.parent.Value(key)
}

// bridge is the context the runner hands on when an observer returned a context with
// its own cancellation or deadline. It is canceled by whichever of parent and derived
// is canceled first, with that context's error and cause; its deadline is the earlier
// of the two. Each side enforces its own deadline, so no timer is needed here and the
// error and cause are exactly those of the side that expired. Once released it is
// canceled with cause ErrFinished.
//
// Err reports the triggering side's error (e.g. context.DeadlineExceeded); contexts
// derived from a bridge report context.Canceled with the same context.Cause.
type bridge struct {
	context.Context // a cancelCtx over base
	base            base
	cancel          context.CancelCauseFunc
	mu              sync.Mutex
	err             error // set once, just before cancel
	stopParent      func() bool
	stopDerived     func() bool
}

// base supplies the bridge's values and deadline. It is never canceled itself, so
// context.WithCancelCause attaches no link to it; the links are the AfterFuncs.
type base struct {
	derived, parent context.Context
	deadline        time.Time
	hasDeadline     bool
}

func (b *base) Deadline() (time.Time, bool) { return b.deadline, b.hasDeadline }
func (b *base) Done() <-chan struct{}       { return nil }
func (b *base) Err() error                  { return nil }
func (b *base) String() string              { return "op.bridge" }

func (b *base) Value(key any) any {
	if v := b.derived.Value(key); v != nil {
		return v
	}
	return b.parent.Value(key)
}

// newBridge links derived to parent. The deadline is the earlier of the two.
func newBridge(parent, derived context.Context) *bridge {
	deadline, ok := parent.Deadline()
	if dd, dok := derived.Deadline(); dok && (!ok || dd.Before(deadline)) {
		deadline, ok = dd, true
	}
	b := &bridge{base: base{derived: derived, parent: parent, deadline: deadline, hasDeadline: ok}}
	b.Context, b.cancel = context.WithCancelCause(&b.base)
	// Already-canceled sides are handled synchronously: AfterFunc would report them
	// from another goroutine, after Start has returned a live context.
	if parent.Err() != nil {
		b.cancelFrom(parent)
		return b
	}
	if derived.Err() != nil {
		b.cancelFrom(derived)
		return b
	}
	if parent.Done() != nil {
		b.stopParent = context.AfterFunc(parent, func() { b.cancelFrom(parent) })
	}
	if d := derived.Done(); d != nil && d != parent.Done() {
		b.stopDerived = context.AfterFunc(derived, func() { b.cancelFrom(derived) })
	}
	return b
}

// Err returns nil until the bridge is canceled, then the error of the side that
// canceled it first (context.Canceled after release).
func (b *bridge) Err() error {
	if b.Context.Err() == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// cancelFrom cancels the bridge with src's error and cause, unless it already is.
func (b *bridge) cancelFrom(src context.Context) {
	err := src.Err()
	if err == nil {
		err = context.Canceled
	}
	b.cancelWith(err, context.Cause(src))
}

// cancelWith cancels the bridge unless it already is; the first caller's err and
// cause win, and err is recorded before the bridge's Done channel closes.
func (b *bridge) cancelWith(err, cause error) {
	b.mu.Lock()
	first := b.err == nil
	if first {
		b.err = err
	}
	b.mu.Unlock()
	if first {
		b.cancel(cause)
	}
}

// release stops the links to parent and derived and cancels the bridge.
func (b *bridge) release() {
	if b.stopParent != nil {
		b.stopParent()
	}
	if b.stopDerived != nil {
		b.stopDerived()
	}
	b.cancelWith(context.Canceled, ErrFinished)
}
