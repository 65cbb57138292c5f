package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// maxWriteRetries bounds how often one state or record write is retried when a
// concurrent write landed first; from the second retry on, each waits conflictBackoff.
const maxWriteRetries = 16

// conflictBackoff waits before try attempt (counted from 0) of a write retried because
// a concurrent write landed first: not at all before the first try or the first retry,
// then a random time below 100µs doubled with each retry, at most 5ms, so that the
// checks of a request's parallel steps, racing on its record, spread out instead of
// colliding again. It returns ctx's error if ctx ends first.
func conflictBackoff(ctx context.Context, attempt int) error {
	if attempt < 2 {
		return nil
	}
	t := time.NewTimer(rand.N(min(50*time.Microsecond<<(attempt-1), 5*time.Millisecond)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// change is what one call changes: the request's state and its execution record. Both
// functions must be safe to apply again to a newer copy (a write that lost a race is
// applied again to what won it). Either may be nil.
type change struct {
	state  func(st *RequestState)
	record func(rec *ExecutionRecord)
}

// failed fails the request with err.
func failed(err error) change {
	cause := CauseOf(err)
	return change{
		state: func(st *RequestState) { st.Lifecycle = LifecycleFailed },
		record: func(rec *ExecutionRecord) {
			rec.Status, rec.Error, rec.Cause = RecordFailed, err.Error(), cause
			rec.Lifecycle, rec.OpenUntil = LifecycleFailed, nil
		},
	}
}

// rejected records a plan phase that was not accepted; a rejection by the required
// hook also fails the request, unless its phases are independent, and so does an
// invalid plan of a request opened with InvalidPlanFails.
func (s *Session) rejected(c *stageCall, plan *RoutingPlan, err error) change {
	r := PlanRejection{DecisionID: c.id, Phase: plan.PhaseNumber, Cause: CauseOf(err), Error: err.Error(), At: s.d.now().UTC()}
	ch := change{}
	if re, ok := AsRequiredAfterPlanningError(err); ok {
		r.Hook, r.Reason, r.Violations = re.Hook, re.Reason, slices.Clone(ViolationsOf(err))
		if re.Plan != nil {
			plan = re.Plan
		}
		if !s.state.PhasesIndependent {
			ch = failed(err)
		}
	} else if pe, ok := AsPlanError(err); ok {
		r.Cause, r.Rule, r.Code, r.StepID = CauseInvalidPlan, pe.Rule, pe.Code, pe.StepID
		if s.state.InvalidPlanFails {
			ch = failed(err)
		}
	}
	r.Plan = s.ownPlan(plan)
	fail := ch.record
	ch.record = func(rec *ExecutionRecord) {
		rec.Rejections = append(rec.Rejections, r)
		if fail != nil {
			fail(rec)
		}
	}
	return ch
}

// completed completes the request with its final response; a request that failed
// stays failed.
func completed(response, source string) change {
	return change{
		state: func(st *RequestState) {
			if st.Lifecycle != LifecycleFailed {
				st.Lifecycle = LifecycleCompleted
			}
		},
		record: func(rec *ExecutionRecord) {
			if rec.Status != RecordFailed {
				rec.Status = RecordSucceeded
				rec.Lifecycle, rec.OpenUntil = LifecycleCompleted, nil
			}
			rec.FinalResponse, rec.FinalResponseSource = response, source
		},
	}
}

// commit writes what a stage call changed: first the request's state (with the call's
// enrichments), then the execution record, to which it appends the call's invocations.
// Late effect updates of the call's hooks rewrite those invocations in place later. A
// store failure is a RefusalError (and told to the observer).
func (s *Session) commit(c *stageCall, ch change) error {
	ctx := c.detached()
	enrichments := c.pctx.Enrichments
	recorded := c.recorded() // the caller's: the record gets copies
	invocations := make([]Invocation, len(recorded))
	for i, inv := range recorded {
		invocations[i] = copyInvocation(inv)
	}
	offset := -1
	err := s.durably(ctx, func(ctx context.Context) error {
		err := s.writeState(ctx, func(st *RequestState) {
			st.Enrichments = enrichments
			if ch.state != nil {
				ch.state(st)
			}
		})
		if err != nil {
			return err
		}
		return s.writeRecord(ctx, func(rec *ExecutionRecord) {
			offset = len(rec.PipelineHooks)
			rec.PipelineHooks = append(rec.PipelineHooks, invocations...)
			if ch.record != nil {
				ch.record(rec)
			}
			if rec.Lifecycle == LifecycleOpen {
				until := s.d.now().Add(s.d.ttl).UTC()
				rec.OpenUntil = &until
			}
		})
	})
	if err != nil {
		return s.d.refuse(ctx, c.stage, s.state.ID, err)
	}
	c.trail.OnLateEffect(func() {
		late := c.trail.Invocations()
		for i := range late {
			late[i].DecisionID = c.id
		}
		_ = s.writeRecord(ctx, func(rec *ExecutionRecord) {
			if offset >= 0 && offset+len(late) <= len(rec.PipelineHooks) {
				copy(rec.PipelineHooks[offset:], late)
			}
		})
	})
	return nil
}

// durably runs write with a context under which the driver's stores defer the
// durability of its writes (DeferringStore), then waits for them: what write writes
// costs a store one commit. It returns write's error, else the store's failure to
// make the writes durable (a refusal, as any store failure).
func (s *Session) durably(ctx context.Context, write func(ctx context.Context) error) error {
	var flushes [2]func() error
	for i, st := range [2]any{s.d.states, s.d.records} {
		if ds, ok := st.(DeferringStore); ok {
			ctx, flushes[i] = ds.Defer(ctx)
		}
	}
	err := write(ctx)
	for _, flush := range flushes {
		if flush == nil {
			continue
		}
		if ferr := flush(); ferr != nil && err == nil {
			err = storeFailure(s.state.ID, ferr)
		}
	}
	return err
}

// writeState applies fn to the request's state and writes it as the next revision.
// When a concurrent write landed first it reloads the state and applies fn again. A
// session of a driver without a state store keeps the state only in memory.
func (s *Session) writeState(ctx context.Context, fn func(st *RequestState)) error {
	return s.writeStateFor(ctx, s.d.ttl, fn)
}

// writeStateFor is writeState keeping the state for ttl.
func (s *Session) writeStateFor(ctx context.Context, ttl time.Duration, fn func(st *RequestState)) error {
	if s.d.states == nil {
		fn(s.state)
		return nil
	}
	for attempt := range maxWriteRetries {
		if err := conflictBackoff(ctx, attempt); err != nil {
			return storeFailure(s.state.ID, err)
		}
		next := *s.state
		fn(&next)
		next.Revision++
		err := s.d.states.PutRequest(ctx, &next, ttl)
		if err == nil {
			*s.state = next
			return nil
		}
		if !errors.Is(err, ErrStaleRevision) {
			return storeFailure(s.state.ID, err)
		}
		if err := s.reload(ctx); err != nil {
			return err
		}
	}
	return &RefusalError{Code: RefusedConflict, RequestID: s.state.ID, Generation: s.gen.ID}
}

// reload replaces the session's state with the stored one (a state that expired
// meanwhile keeps the session's copy, to be written again from revision 0).
func (s *Session) reload(ctx context.Context) error {
	st, err := s.d.load(ctx, s.state.ID)
	if err != nil {
		return err
	}
	if st == nil {
		s.state.Revision = 0
		return nil
	}
	if st.Enrichments == nil {
		st.Enrichments = map[string]any{}
	}
	s.state = st
	return nil
}

// writeRecord applies fn to the request's record and writes it as the next revision,
// retrying when a concurrent rewrite landed first. It is the only way the driver
// writes a record, so every write is revision-gated. It is safe for concurrent use
// (late effect updates arrive from other goroutines).
func (s *Session) writeRecord(ctx context.Context, fn func(rec *ExecutionRecord)) error {
	return s.rewriteRecord(ctx, true, func(rec *ExecutionRecord) bool { fn(rec); return true })
}

// rewriteRecord is writeRecord for a change that may decline: fn returns false to
// write nothing. With create false, a request without a record is ErrRecordNotFound.
func (s *Session) rewriteRecord(ctx context.Context, create bool, fn func(rec *ExecutionRecord) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.d.now().UTC()
	if s.d.records == nil {
		if s.local == nil || s.fresh {
			if !create {
				return RecordNotFound(s.state.ID)
			}
			s.local, s.fresh = s.newRecord(now), false
		}
		if fn(s.local) {
			s.local.Revision++
			s.local.UpdatedAt = now
		}
		return nil
	}
	for attempt := range maxWriteRetries {
		if err := conflictBackoff(ctx, attempt); err != nil {
			return storeFailure(s.state.ID, err)
		}
		rec, err := s.d.records.Get(ctx, s.state.ID)
		switch {
		case errors.Is(err, ErrRecordNotFound) && !create:
			return err
		case errors.Is(err, ErrRecordNotFound):
			rec = s.newRecord(now)
		case err != nil:
			return storeFailure(s.state.ID, err)
		case s.fresh:
			revision := rec.Revision
			rec = s.newRecord(now)
			rec.Revision = revision
		}
		if !fn(rec) {
			return nil
		}
		if n := RecordEntries(rec); n > s.d.maxEntries {
			return storeFailure(s.state.ID, fmt.Errorf("%w: the execution record would hold %d entries, over the limit of %d", ErrTooLarge, n, s.d.maxEntries))
		}
		rec.Revision++
		rec.UpdatedAt = now
		err = s.d.records.Put(ctx, rec)
		if !errors.Is(err, ErrStaleRevision) {
			if err != nil {
				return storeFailure(s.state.ID, err)
			}
			s.fresh = false
			return nil
		}
	}
	return storeFailure(s.state.ID, fmt.Errorf("execution record %q: too many concurrent rewrites", s.state.ID))
}

func (s *Session) newRecord(now time.Time) *ExecutionRecord {
	return &ExecutionRecord{
		SchemaVersion: ExecutionRecordVersion, RequestID: s.state.ID, Generation: s.gen.ID, Tenant: TenantOf(s.state.Metadata), Request: s.state.Request,
		Metadata: recordedMetadata(s.state.Metadata),
		Status:   RecordRunning, Lifecycle: LifecycleOpen,
		PipelineHooks: []Invocation{}, CreatedAt: now, UpdatedAt: now,
	}
}

// recordedMetadata is what a record keeps of metadata m: m itself (records and states
// share read-only values), an empty map for none.
func recordedMetadata(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Record returns the request's current execution record: a copy whose fields and entry
// slices the caller may change, whose entries' nested values (plans, results, effects,
// decisions) are shared with the store and read-only (see CopyRecord).
func (s *Session) Record(ctx context.Context) (*ExecutionRecord, error) {
	if s.d.records != nil {
		return s.d.records.Get(ctx, s.state.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.local == nil {
		return nil, RecordNotFound(s.state.ID)
	}
	return CopyRecord(s.local), nil
}
