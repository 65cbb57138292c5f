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

func TestRunner_DetachedContextKeepsParentCancelCause(t *testing.T) {
	for name, detach := range detachments(t) {
		t.Run(name, func(t *testing.T) {
			parent, cancel := context.WithCancelCause(context.Background())
			next, finish := startWith(t, parent, detach)
			defer finish(op.Result{Outcome: op.Canceled})
			if next.Err() != nil {
				t.Fatalf("operation context canceled before its parent: %v", next.Err())
			}
			cancel(errClientGone)
			<-next.Done()
			if !errors.Is(next.Err(), context.Canceled) || context.Cause(next) != errClientGone {
				t.Fatalf("Err = %v, Cause = %v; want Canceled, %v", next.Err(), context.Cause(next), errClientGone)
			}
			child, stop := context.WithCancel(next)
			defer stop()
			if context.Cause(child) != errClientGone {
				t.Fatalf("a child of the operation context has cause %v", context.Cause(child))
			}
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

func TestRunner_ValuesFallBackToParent(t *testing.T) {
	cancelable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, parent := range map[string]context.Context{
		"background_parent": context.Background(),
		"cancelable_parent": cancelable,
	} {
		parent = context.WithValue(context.WithValue(parent, ctxKey("runtime"), "rt"), ctxKey("shared"), "parent")
		for swapName, swap := range map[string]func(context.Context) context.Context{
			"child": func(ctx context.Context) context.Context {
				return context.WithValue(ctx, ctxKey("shared"), "observer")
			},
			"detached": func(context.Context) context.Context {
				return context.WithValue(context.Background(), ctxKey("shared"), "observer")
			},
		} {
			t.Run(name+"/"+swapName, func(t *testing.T) {
				next, finish := startWith(t, parent, swap)
				defer finish(op.Result{Outcome: op.Completed})
				if next.Value(ctxKey("runtime")) != "rt" || next.Value(ctxKey("shared")) != "observer" {
					t.Fatalf("runtime = %v, shared = %v; want rt, observer",
						next.Value(ctxKey("runtime")), next.Value(ctxKey("shared")))
				}
			})
		}
	}
}

func TestRunner_CannotReviveCanceledParent(t *testing.T) {
	for name, detach := range detachments(t) {
		t.Run(name, func(t *testing.T) {
			parent, cancel := context.WithCancelCause(context.Background())
			cancel(errClientGone)
			next, finish := startWith(t, parent, detach)
			defer finish(op.Result{Outcome: op.Canceled})
			select {
			case <-next.Done():
			default:
				t.Fatal("observer revived a canceled operation")
			}
			if context.Cause(next) != errClientGone {
				t.Fatalf("Cause = %v, want %v", context.Cause(next), errClientGone)
			}
		})
	}
}

func TestRunner_ObserverCanCancelSooner(t *testing.T) {
	errObserver := errors.New("observer gave up")
	var stop context.CancelCauseFunc
	next, finish := startWith(t, context.Background(), func(context.Context) context.Context {
		var ctx context.Context
		ctx, stop = context.WithCancelCause(context.Background())
		return ctx
	})
	defer finish(op.Result{Outcome: op.Canceled})
	stop(errObserver)
	<-next.Done()
	if context.Cause(next) != errObserver {
		t.Fatalf("Cause = %v, want %v", context.Cause(next), errObserver)
	}
}

func TestRunner_FinishReleasesContextLinks(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	detached, finish := startWith(t, parent, context.WithoutCancel)
	child, finishChild := startWith(t, parent, func(ctx context.Context) context.Context {
		return context.WithValue(ctx, ctxKey("k"), "v")
	})
	finish(op.Result{Outcome: op.Completed})
	finishChild(op.Result{Outcome: op.Completed})
	<-detached.Done()
	if !errors.Is(context.Cause(detached), op.ErrFinished) {
		t.Fatalf("released bridge cause = %v, want ErrFinished", context.Cause(detached))
	}
	if child.Err() != nil || parent.Err() != nil {
		t.Fatalf("finish canceled contexts it does not own: child %v, parent %v", child.Err(), parent.Err())
	}
}

// chanCtx is a cancelable context of a type the context package does not know, so
// every link to it costs a goroutine until the link is stopped.
type chanCtx struct {
	context.Context
	done chan struct{}
}

func newChanCtx() *chanCtx { return &chanCtx{Context: context.Background(), done: make(chan struct{})} }

func (c *chanCtx) Done() <-chan struct{} { return c.done }

func (c *chanCtx) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

func TestRunner_FinishLeaksNoGoroutines(t *testing.T) {
	// synctest.Test fails if a goroutine started in the bubble is still blocked when
	// the function returns, so a link that finish forgot to stop fails this test.
	synctest.Test(t, func(t *testing.T) {
		parent := newChanCtx()
		for range 10 {
			next, finish := startWith(t, parent, func(context.Context) context.Context { return newChanCtx() })
			synctest.Wait()
			finish(op.Result{Outcome: op.Completed})
			<-next.Done()
		}
	})
}

func TestRunner_ChainedDetachedObserversKeepEveryLink(t *testing.T) {
	detach := func(key string) op.Around {
		return op.Around{Name: key, Operations: []op.Operation{op.Turn},
			Begin: func(ctx context.Context, _ op.Call) (context.Context, op.FinishFunc) {
				return context.WithValue(context.WithoutCancel(ctx), ctxKey(key), key), nil
			}}
	}
	r, _ := mustCompile(t, op.Set{Arounds: []op.Around{detach("first"), detach("second")}})
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey("runtime"), "runtime"))
	next, finish, err := r.Start(parent, op.Call{Operation: op.Turn, RequestID: "r"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer finish(op.Result{Outcome: op.Canceled})
	for _, k := range []string{"runtime", "first", "second"} {
		if next.Value(ctxKey(k)) != k {
			t.Fatalf("value %q lost: %v", k, next.Value(ctxKey(k)))
		}
	}
	cancel(errClientGone)
	<-next.Done()
	if context.Cause(next) != errClientGone {
		t.Fatalf("Cause = %v, want %v", context.Cause(next), errClientGone)
	}
}
