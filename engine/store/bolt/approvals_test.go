package bolt

import (
	"context"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

// TestApprovals_SurviveRestart: a pending approval and a decided one are there, as
// they were, after the store is closed and opened again; a replaced one has left the
// file.
func TestApprovals_SurviveRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	pending := &engine.Approval{ID: "apr_0123456789abcdef0123456789abcdef_1", Slot: "0123456789abcdef0123456789abcdef", Seq: 1, Revision: 1,
		Status: engine.ApprovalPending, RequestID: "req-1", Parameters: map[string]any{"amount": 25000.0}, ExpiresAt: time.Now().Add(time.Hour).UTC()}
	decided := &engine.Approval{ID: "apr_fedcba9876543210fedcba9876543210_1", Slot: "fedcba9876543210fedcba9876543210", Seq: 1, Revision: 1,
		Status: engine.ApprovalPending, RequestID: "req-2"}
	for _, a := range []*engine.Approval{pending, decided} {
		if err := s.PutApproval(ctx, a, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	rejected := *decided
	rejected.Revision, rejected.Status, rejected.DecidedBy = 2, engine.ApprovalRejected, "carol"
	if err := s.PutApproval(ctx, &rejected, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir, Options{})
	if got := keys(t, s, kindApproval); len(got) != 2 {
		t.Fatalf("approval keys in the file = %v, want the two slots once each", got)
	}
	got, ok, err := s.GetApproval(ctx, pending.Slot)
	if err != nil || !ok || got.Status != engine.ApprovalPending || got.ID != pending.ID || got.Parameters["amount"] != 25000.0 || !got.ExpiresAt.Equal(pending.ExpiresAt) {
		t.Fatalf("pending after restart = %+v, %v, %v", got, ok, err)
	}
	got, ok, err = s.GetApproval(ctx, decided.Slot)
	if err != nil || !ok || got.Status != engine.ApprovalRejected || got.DecidedBy != "carol" || got.Revision != 2 {
		t.Fatalf("rejected after restart = %+v, %v, %v", got, ok, err)
	}
	all, err := s.ListApprovals(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("ListApprovals after restart = %d approvals, %v", len(all), err)
	}
}
