package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// GetApproval implements engine.ApprovalStore.
func (s *Store) GetApproval(ctx context.Context, slot string) (*engine.Approval, bool, error) {
	v, ok, err := s.lookup(ctx, slot, s.approvals)
	if err != nil || !ok {
		return nil, false, err
	}
	a, err := store.DecodeApproval(v.payload)
	return a, err == nil, err
}

// PutApproval implements engine.ApprovalStore, revision-gated; ttl 0 means
// store.DefaultApprovalTTL. It returns once the approval is on disk.
func (s *Store) PutApproval(ctx context.Context, a *engine.Approval, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode approval: %w", err)
	}
	if int64(len(data)) > s.opts.MaxStateBytes {
		return tooLarge("approval", a.Slot, len(data), s.opts.MaxStateBytes)
	}
	if err := checkKey(a.Slot); err != nil {
		return err
	}
	if ttl <= 0 {
		ttl = store.DefaultApprovalTTL
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	now := s.now()
	if old, ok := s.approvals.Get(a.Slot, now); ok && old.revision >= a.Revision {
		s.mu.Unlock()
		return store.StaleApproval(a, old.revision)
	}
	expires := now.Add(ttl)
	stamp, size := s.put(s.approvals, a.Slot, encodeValue(value{kind: kindApproval, key: a.Slot, expires: expiry(expires), revision: a.Revision}, data))
	s.approvals.PutSized(a.Slot, entry{stamp: stamp, revision: a.Revision}, size, expires)
	b := s.next
	s.mu.Unlock()
	return s.wait(b)
}

// ListApprovals implements engine.ApprovalStore.
func (s *Store) ListApprovals(ctx context.Context) ([]*engine.Approval, error) {
	var slots []string
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.approvals.Range(s.now(), func(slot string, _ entry) bool {
		slots = append(slots, slot)
		return true
	})
	s.mu.Unlock()
	out := make([]*engine.Approval, 0, len(slots))
	for _, slot := range slots {
		a, ok, err := s.GetApproval(ctx, slot)
		if err != nil {
			return nil, err
		}
		if ok { // gone since the index was read
			out = append(out, a)
		}
	}
	return out, nil
}
