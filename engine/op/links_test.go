package op_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/agentd-dev/agentd/engine/op"
)

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
	synctest.Test(t, func(t *testing.T) {
		errObserver := errors.New("observer gave up")
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stop context.CancelCauseFunc
		next, finish := startWith(t, parent, func(context.Context) context.Context {
			var ctx context.Context
			ctx, stop = context.WithCancelCause(context.Background())
			return ctx
		})
		defer finish(op.Result{Outcome: op.Canceled})
		stop(errObserver)
		if !settled(next) || context.Cause(next) != errObserver || parent.Err() != nil {
			t.Fatalf("Cause = %v, parent Err = %v; want %v, nil", context.Cause(next), parent.Err(), errObserver)
		}
	})
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
			if next.Err() == nil {
				t.Fatal("finish did not release the bridge")
			}
		}
	})
}

func TestRunner_ChainedDetachedObserversKeepEveryLink(t *testing.T) {
	synctest.Test(t, testChainedDetachedObservers)
}

func testChainedDetachedObservers(t *testing.T) {
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
	if !settled(next) || context.Cause(next) != errClientGone {
		t.Fatalf("Cause = %v, want %v", context.Cause(next), errClientGone)
	}
}
