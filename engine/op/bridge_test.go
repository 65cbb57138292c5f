package op_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentd-dev/agentd/engine/op"
)

// startWith runs one turn whose single observer replaces the context with swap(ctx).
func startWith(t *testing.T, parent context.Context, swap func(context.Context) context.Context) (context.Context, op.FinishFunc) {
	t.Helper()
	r, _ := mustCompile(t, op.Set{Arounds: []op.Around{{Name: "swap", Operations: []op.Operation{op.Turn},
		Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) { return swap(ctx), nil }}}})
	next, finish, err := r.Start(parent, op.Call{Operation: op.Turn, RequestID: "r"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return next, finish
}

// detachments are the ways an observer can hand back a context that is not a child of
// the one it was given.
func detachments(t *testing.T) map[string]func(context.Context) context.Context {
	return map[string]func(context.Context) context.Context{
		"without_cancel": context.WithoutCancel,
		"background":     func(context.Context) context.Context { return context.Background() },
		"own_cancel": func(context.Context) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			return ctx
		},
		"values_on_background": func(context.Context) context.Context {
			return context.WithValue(context.Background(), ctxKey("observer"), "o")
		},
	}
}

var errClientGone = errors.New("client went away")

// settled waits until every other goroutine in the synctest bubble is blocked or gone
// (so any pending cancellation has been delivered) and reports whether ctx is done.
func settled(ctx context.Context) bool {
	synctest.Wait()
	return ctx.Err() != nil
}

func TestRunner_DetachedContextKeepsParentCancelCause(t *testing.T) {
	for name := range detachments(t) {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				parent, cancel := context.WithCancelCause(context.Background())
				next, finish := startWith(t, parent, detachments(t)[name])
				defer finish(op.Result{Outcome: op.Canceled})
				if settled(next) {
					t.Fatalf("operation context canceled before its parent: %v", next.Err())
				}
				cancel(errClientGone)
				if !settled(next) || !errors.Is(next.Err(), context.Canceled) || context.Cause(next) != errClientGone {
					t.Fatalf("Err = %v, Cause = %v; want Canceled, %v", next.Err(), context.Cause(next), errClientGone)
				}
				child, stop := context.WithCancel(next)
				defer stop()
				if context.Cause(child) != errClientGone {
					t.Fatalf("a child of the operation context has cause %v", context.Cause(child))
				}
			})
		})
	}
}

var errBudget = errors.New("turn budget exhausted")

func TestRunner_DetachedContextKeepsParentDeadline(t *testing.T) {
	for name := range detachments(t) {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				detach := detachments(t)[name]
				deadline := time.Now().Add(time.Hour)
				parent, cancel := context.WithDeadlineCause(context.Background(), deadline, errBudget)
				defer cancel()
				next, finish := startWith(t, parent, detach)
				defer finish(op.Result{Outcome: op.Canceled})
				if d, ok := next.Deadline(); !ok || !d.Equal(deadline) {
					t.Fatalf("Deadline = %v, %v; want the parent's %v", d, ok, deadline)
				}
				time.Sleep(time.Hour)
				synctest.Wait()
				if !errors.Is(next.Err(), context.DeadlineExceeded) || context.Cause(next) != errBudget {
					t.Fatalf("Err = %v, Cause = %v; want DeadlineExceeded, %v", next.Err(), context.Cause(next), errBudget)
				}
			})
		})
	}
}

func TestRunner_ObserverCanTightenDeadline(t *testing.T) {
	for name, base := range map[string]func(context.Context) context.Context{
		"child":    func(ctx context.Context) context.Context { return ctx },
		"detached": context.WithoutCancel,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				parent, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				tight := time.Now().Add(time.Minute)
				next, finish := startWith(t, parent, func(ctx context.Context) context.Context {
					ctx, stop := context.WithDeadline(base(ctx), tight)
					t.Cleanup(stop)
					return ctx
				})
				defer finish(op.Result{Outcome: op.Canceled})
				if d, _ := next.Deadline(); !d.Equal(tight) {
					t.Fatalf("Deadline = %v, want the observer's %v", d, tight)
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if !errors.Is(next.Err(), context.DeadlineExceeded) || parent.Err() != nil {
					t.Fatalf("operation Err = %v, parent Err = %v; want DeadlineExceeded, nil", next.Err(), parent.Err())
				}
			})
		})
	}
}

func TestRunner_ObserverCannotExtendDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		want, _ := parent.Deadline()
		next, finish := startWith(t, parent, func(ctx context.Context) context.Context {
			ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Hour)
			t.Cleanup(stop)
			return ctx
		})
		defer finish(op.Result{Outcome: op.Canceled})
		if d, _ := next.Deadline(); !d.Equal(want) {
			t.Fatalf("Deadline = %v, want the parent's %v", d, want)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if !errors.Is(next.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v after the parent's deadline", next.Err())
		}
	})
}
