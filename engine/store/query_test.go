package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

// The list holds exactly the records Get finds: none past its retention, none evicted.
func TestMemory_ListFollowsRetentionAndEviction(t *testing.T) {
	m := NewMemory(MemoryOptions{Retention: Retention{Success: time.Minute, Error: time.Hour, MaxRecords: 3}})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return now }
	ctx := context.Background()
	for i, id := range []string{"evicted", "ok", "bad", "running", "open"} {
		status := map[string]engine.RecordStatus{"ok": engine.RecordSucceeded, "bad": engine.RecordFailed}[id]
		if status == "" {
			status = engine.RecordRunning
		}
		if err := m.Put(ctx, &engine.ExecutionRecord{RequestID: id, Status: status, Revision: 1, UpdatedAt: now.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []string {
		page, err := m.List(ctx, Query{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range page.Records {
			ids = append(ids, r.RequestID)
		}
		return ids
	}
	if got := list(); !slices.Equal(got, []string{"open", "running", "bad", "ok"}) {
		t.Fatalf("list = %v, want [open running bad ok] (evicted beyond 3 records that did not fail)", got)
	}
	now = now.Add(2 * time.Minute)
	if got := list(); !slices.Equal(got, []string{"open", "running", "bad"}) {
		t.Fatalf("list past the success retention = %v, want [open running bad]", got)
	}
	// A failed record written again as failed leaves a tombstone among the others:
	// it is listed once.
	if err := m.Put(ctx, &engine.ExecutionRecord{RequestID: "open", Status: engine.RecordFailed, Revision: 2, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if got := list(); !slices.Equal(got, []string{"open", "running", "bad"}) {
		t.Fatalf("list after open failed = %v, want [open running bad]", got)
	}
}
