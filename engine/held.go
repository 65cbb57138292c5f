package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
)

// Held rounds (docs/semantics.md §8.20). An entry point whose planner cannot be asked
// again for the same plan (the OpenAI gateway: a model's round of tool calls) keeps a
// phase whose calls wait for approvals in the request's state, and a hold entry that
// finds the request by a key of the entry point's own (the conversation): the same
// input sent again, to this daemon after a restart or to another replica sharing the
// store, is answered from the accepted steps, not planned again.

// MaxHoldKeyLen bounds a held round's key.
const MaxHoldKeyLen = 128

// holdID is the id of the state the hold entry of key is stored under.
func holdID(key string) string { return "held-" + key }

// HoldRound keeps the request's steps held (ids of accepted steps of its phases, each
// waiting for an approval) so that Driver.HeldRound finds them under key: it writes
// them into the request's state, and a hold entry naming the request under key,
// both kept for the generation's approval TTL plus the state TTL (the longest a held
// step's approval can be used). A later HoldRound under the same key replaces the
// entry. key must be 1 to MaxHoldKeyLen bytes; it should say whose input it is (a
// tenant's), as the entry point sees it. An id that is no accepted step, or an entry
// under key that is a request's own state, is an error and nothing is held; a store
// failure is a refusal.
func (s *Session) HoldRound(ctx context.Context, key string, held []string) error {
	if key == "" || len(key) > MaxHoldKeyLen {
		return fmt.Errorf("a held round's key is 1 to %d bytes, got %d", MaxHoldKeyLen, len(key))
	}
	for _, id := range held {
		if !slices.ContainsFunc(s.state.PriorSteps, func(st RoutingStep) bool { return st.StepID == id }) {
			return fmt.Errorf("held step %q is no accepted step of request %q", id, s.state.ID)
		}
	}
	if s.d.states == nil {
		return errors.New("the driver keeps no request states: a held round cannot be found again")
	}
	ttl := cmp.Or(s.gen.ApprovalTTL, DefaultApprovalTTL) + s.d.ttl
	held = slices.Clone(held)
	if err := s.writeStateFor(ctx, ttl, func(st *RequestState) { st.Held = held }); err != nil {
		return err
	}
	err := s.rewriteRecord(ctx, false, func(rec *ExecutionRecord) bool {
		if rec.Lifecycle != LifecycleOpen {
			return false
		}
		until := s.d.now().Add(ttl).UTC()
		rec.OpenUntil = &until
		return true
	})
	if err != nil && !errors.Is(err, ErrRecordNotFound) {
		return err
	}
	id := holdID(key)
	for attempt := range maxWriteRetries {
		if err := conflictBackoff(ctx, attempt); err != nil {
			return storeFailure(s.state.ID, err)
		}
		old, err := s.d.load(ctx, id)
		if err != nil {
			return err
		}
		entry := &RequestState{ID: id, HoldOf: s.state.ID, Revision: 1}
		if old != nil {
			if old.HoldOf == "" {
				return fmt.Errorf("the hold entry of a round is stored as %q, which is a request's own id", id)
			}
			entry.Revision = old.Revision + 1
		}
		err = s.d.states.PutRequest(ctx, entry, ttl)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, ErrStaleRevision):
			return storeFailure(s.state.ID, err)
		}
	}
	return &RefusalError{Code: RefusedConflict, RequestID: s.state.ID, Generation: s.gen.ID}
}

// HeldRound returns the request a HoldRound kept under key, resumed for a call of
// stage, and its held steps that have not run yet (a check that allowed one claimed
// its run), in the order they were held. The session is nil when no round is held
// under key: none was, it expired, its request's state is gone or every held step
// ran. The request is refused as Resume refuses it (another tenant's than ctx is
// confined to, failed, its generation retired or expired).
func (d *Driver) HeldRound(ctx context.Context, stage Stage, key string) (*Session, []RoutingStep, error) {
	if d.states == nil || key == "" || len(key) > MaxHoldKeyLen {
		return nil, nil, nil
	}
	entry, err := d.load(ctx, holdID(key))
	if err != nil || entry == nil || entry.HoldOf == "" {
		return nil, nil, d.refuseIf(ctx, stage, holdID(key), err)
	}
	st, err := d.load(ctx, entry.HoldOf)
	if err != nil || st == nil {
		return nil, nil, d.refuseIf(ctx, stage, entry.HoldOf, err)
	}
	var steps []RoutingStep
	for _, id := range st.Held {
		i := slices.IndexFunc(st.PriorSteps, func(s RoutingStep) bool { return s.StepID == id })
		if i >= 0 && st.Runs[id] == nil {
			steps = append(steps, st.PriorSteps[i])
		}
	}
	if len(steps) == 0 {
		return nil, nil, nil
	}
	gen, err := d.pinned(ctx, st)
	if err != nil {
		return nil, nil, d.refuse(ctx, stage, st.ID, err)
	}
	return d.newSession(gen, st, false), steps, nil
}

// refuseIf is refuse for a non-nil err, else nil.
func (d *Driver) refuseIf(ctx context.Context, stage Stage, id string, err error) error {
	if err == nil {
		return nil
	}
	return d.refuse(ctx, stage, id, err)
}
