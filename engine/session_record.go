package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// maxRecordRetries bounds how often one record write is retried when a concurrent
// rewrite landed first.
const maxRecordRetries = 8

// commit saves the request's state, then appends the call's invocations to the
// execution record and applies fn to it. Late effect updates of the call's hooks
// rewrite those invocations in place later. A store failure is a RefusalError.
func (s *Session) commit(c *stageCall, fn func(rec *ExecutionRecord)) error {
	ctx := context.WithoutCancel(c.ctx)
	s.state.Enrichments = c.pctx.Enrichments
	if err := s.saveState(ctx); err != nil {
		return s.d.refuse(ctx, c.stage, s.state.ID, err)
	}
	invocations := c.recorded()
	offset := -1
	err := s.writeRecord(ctx, func(rec *ExecutionRecord) {
		offset = len(rec.PipelineHooks)
		rec.PipelineHooks = append(rec.PipelineHooks, invocations...)
		fn(rec)
		if rec.Lifecycle == LifecycleOpen {
			until := s.d.now().Add(s.d.ttl).UTC()
			rec.OpenUntil = &until
		}
	})
	if err != nil {
		return s.d.refuse(ctx, c.stage, s.state.ID, err)
	}
	c.trail.OnLateEffect(func() {
		late := c.trail.Invocations()
		_ = s.writeRecord(ctx, func(rec *ExecutionRecord) {
			if offset >= 0 && offset+len(late) <= len(rec.PipelineHooks) {
				copy(rec.PipelineHooks[offset:], late)
			}
		})
	})
	return nil
}

func (s *Session) saveState(ctx context.Context) error {
	if s.d.states == nil {
		return nil
	}
	if err := s.d.states.PutRequest(ctx, s.state, s.d.ttl); err != nil {
		return unavailable(s.state.ID, err)
	}
	return nil
}

// failing marks the request's state failed and returns the record change that fails
// it with err. Call it before commit, which saves the state first.
func (s *Session) failing(err error) func(rec *ExecutionRecord) {
	s.state.Lifecycle = LifecycleFailed
	return func(rec *ExecutionRecord) {
		rec.Status, rec.Error = RecordFailed, err.Error()
		rec.Lifecycle, rec.OpenUntil = LifecycleFailed, nil
	}
}

// completing marks the request's state completed (unless it failed) and returns the
// record change that completes it with its final response. Call it before commit.
func (s *Session) completing(response, source string) func(rec *ExecutionRecord) {
	if s.state.Lifecycle != LifecycleFailed {
		s.state.Lifecycle = LifecycleCompleted
	}
	return func(rec *ExecutionRecord) {
		if rec.Status != RecordFailed {
			rec.Status = RecordSucceeded
			rec.Lifecycle, rec.OpenUntil = LifecycleCompleted, nil
		}
		rec.FinalResponse, rec.FinalResponseSource = response, source
	}
}

// writeRecord applies fn to the request's record and writes it as the next revision,
// retrying when a concurrent rewrite landed first. It is the only way the driver
// writes a record, so every write is revision-gated. It is safe for concurrent use
// (late effect updates arrive from other goroutines).
func (s *Session) writeRecord(ctx context.Context, fn func(rec *ExecutionRecord)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.d.now().UTC()
	if s.d.records == nil {
		if s.local == nil || s.fresh {
			s.local, s.fresh = s.newRecord(now), false
		}
		fn(s.local)
		s.local.Revision++
		s.local.UpdatedAt = now
		return nil
	}
	for range maxRecordRetries {
		rec, err := s.d.records.Get(ctx, s.state.ID)
		switch {
		case errors.Is(err, ErrRecordNotFound):
			rec = s.newRecord(now)
		case err != nil:
			return unavailable(s.state.ID, err)
		case s.fresh:
			revision := rec.Revision
			rec = s.newRecord(now)
			rec.Revision = revision
		}
		fn(rec)
		rec.Revision++
		rec.UpdatedAt = now
		err = s.d.records.Put(ctx, rec)
		if !errors.Is(err, ErrStaleRevision) {
			if err != nil {
				return unavailable(s.state.ID, err)
			}
			s.fresh = false
			return nil
		}
	}
	return unavailable(s.state.ID, fmt.Errorf("execution record %q: too many concurrent rewrites", s.state.ID))
}

func (s *Session) newRecord(now time.Time) *ExecutionRecord {
	return &ExecutionRecord{
		RequestID: s.state.ID, Generation: s.gen.ID, Status: RecordRunning, Lifecycle: LifecycleOpen,
		PipelineHooks: []Invocation{}, CreatedAt: now, UpdatedAt: now,
	}
}

// Record returns the request's current execution record, a copy the caller owns.
func (s *Session) Record(ctx context.Context) (*ExecutionRecord, error) {
	if s.d.records != nil {
		return s.d.records.Get(ctx, s.state.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.local == nil {
		return nil, fmt.Errorf("%w: %q", ErrRecordNotFound, s.state.ID)
	}
	return CloneRecord(s.local)
}
