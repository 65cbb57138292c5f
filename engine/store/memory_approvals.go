package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

// DefaultApprovalTTL is how long a store keeps an approval when PutApproval is given
// no ttl.
const DefaultApprovalTTL = engine.DefaultApprovalTTL + DefaultRequestTTL

// storedApproval is an approval as Memory keeps it: its revision and its JSON.
type storedApproval struct {
	revision int64
	data     []byte
}

// GetApproval implements engine.ApprovalStore.
func (m *Memory) GetApproval(ctx context.Context, slot string) (*engine.Approval, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	m.approvalsMu.Lock()
	e, ok := m.approvals.Get(slot, m.now())
	m.approvalsMu.Unlock()
	if !ok {
		return nil, false, nil
	}
	a, err := DecodeApproval(e.data)
	return a, err == nil, err
}

// PutApproval implements engine.ApprovalStore, revision-gated; ttl 0 means
// DefaultApprovalTTL.
func (m *Memory) PutApproval(ctx context.Context, a *engine.Approval, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode approval: %w", err)
	}
	if ttl <= 0 {
		ttl = DefaultApprovalTTL
	}
	m.approvalsMu.Lock()
	defer m.approvalsMu.Unlock()
	now := m.now()
	if old, ok := m.approvals.Get(a.Slot, now); ok && old.revision >= a.Revision {
		return StaleApproval(a, old.revision)
	}
	m.approvals.Put(a.Slot, storedApproval{revision: a.Revision, data: data}, now.Add(ttl))
	return nil
}

// ListApprovals implements engine.ApprovalStore.
func (m *Memory) ListApprovals(ctx context.Context) ([]*engine.Approval, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var datas [][]byte
	m.approvalsMu.Lock()
	m.approvals.Range(m.now(), func(_ string, e storedApproval) bool {
		datas = append(datas, e.data)
		return true
	})
	m.approvalsMu.Unlock()
	out := make([]*engine.Approval, 0, len(datas))
	for _, d := range datas {
		a, err := DecodeApproval(d)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// DecodeApproval decodes an approval a store kept as JSON.
func DecodeApproval(data []byte) (*engine.Approval, error) {
	var a engine.Approval
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("decode approval: %w", err)
	}
	return &a, nil
}

// StaleApproval is the error of a revision-gated approval write that lost: the
// stored approval of a's slot has revision stored.
func StaleApproval(a *engine.Approval, stored int64) error {
	return fmt.Errorf("%w: approval slot %s has revision %d, got %d", engine.ErrStaleRevision, a.Slot, stored, a.Revision)
}
