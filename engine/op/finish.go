package op

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// Outcome is how an operation ended.
type Outcome string

// Outcomes.
const (
	Completed Outcome = "completed"
	Denied    Outcome = "denied"
	Failed    Outcome = "failed"
	Canceled  Outcome = "canceled"
)

// Result is what the caller reports to the aggregate finish. The runner fills in fields
// the caller leaves zero: Call (when Call.Operation is empty) with the call given to
// Start, StartedAt with the time Start began, EndedAt with the time finish was called.
type Result struct {
	Call      Call
	StartedAt time.Time
	EndedAt   time.Time
	Outcome   Outcome
	Err       error
}

// noFinish is returned when there is nothing to finish.
var noFinish FinishFunc = func(Result) {}

// run is the state of one started operation that has something to finish or link.
type run struct {
	logger  *slog.Logger
	call    Call
	started time.Time
	done    atomic.Bool
	steps   []step
	buf     [2]step
	values  [2]fallback // the first value joins live here, saving an allocation each
	nvalues int
}

// step is one observer that returned a finish callback, a bridged context, or both.
type step struct {
	around *around
	finish FinishFunc
	bridge *bridge
}

func (r *Runner) newRun(call Call, started time.Time) *run {
	st := &run{logger: r.logger, call: call, started: started}
	st.steps = st.buf[:0]
	return st
}

// add records an observer's finish and joins the context it returned (derived) to the
// one it was given (parent), returning the context for the next callback:
//
//   - derived == parent: parent;
//   - derived shares parent's cancellation: derived with parent's values behind it;
//   - otherwise a bridge, released by finish.
func (s *run) add(a *around, fin FinishFunc, parent, derived context.Context) context.Context {
	next := parent
	var b *bridge
	switch {
	case same(parent, derived):
	case shareCancellation(parent, derived):
		next = s.joinValues(parent, derived)
	default:
		b = newBridge(parent, derived)
		next = b
	}
	if fin != nil || b != nil {
		s.steps = append(s.steps, step{around: a, finish: fin, bridge: b})
	}
	return next
}

func (s *run) joinValues(parent, derived context.Context) context.Context {
	if s.nvalues == len(s.values) {
		return &fallback{Context: derived, parent: parent}
	}
	f := &s.values[s.nvalues]
	s.nvalues++
	f.Context, f.parent = derived, parent
	return f
}

// finish is the aggregate FinishFunc. The first call runs every recorded finish
// callback in reverse registration order, each with its own copy of the result,
// logging and swallowing panics, and then releases the context bridges. Later or
// concurrent calls return at once without doing anything.
func (s *run) finish(res Result) {
	if !s.done.CompareAndSwap(false, true) {
		return
	}
	if res.Call.Operation == "" {
		res.Call = s.call
	}
	if res.StartedAt.IsZero() {
		res.StartedAt = s.started
	}
	if res.EndedAt.IsZero() {
		res.EndedAt = time.Now()
	}
	for i := len(s.steps) - 1; i >= 0; i-- {
		if st := &s.steps[i]; st.finish != nil {
			s.callFinish(st, res)
		}
	}
	for i := len(s.steps) - 1; i >= 0; i-- {
		if b := s.steps[i].bridge; b != nil {
			b.release()
		}
	}
	// Drop the callbacks and bridges; values stays, as the contexts handed out live there.
	clear(s.buf[:])
	s.steps = nil
}

func (s *run) callFinish(st *step, res Result) {
	defer func() {
		if v := recover(); v != nil {
			logPanic(context.Background(), s.logger, "finish", s.call.Operation, st.around.name, st.around.index, v)
		}
	}()
	res.Call = res.Call.Clone()
	st.finish(res)
}
