package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

func TestMemory_RetentionByOutcome(t *testing.T) {
	m := NewMemory(MemoryOptions{Retention: Retention{Success: time.Minute, Error: time.Hour}})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return now }
	ctx := context.Background()
	ok := &engine.ExecutionRecord{RequestID: "ok", Status: engine.RecordSucceeded, Revision: 1}
	bad := &engine.ExecutionRecord{RequestID: "bad", Status: engine.RecordFailed, Revision: 1}
	for _, rec := range []*engine.ExecutionRecord{ok, bad} {
		if err := m.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Minute)
	if _, err := m.Get(ctx, "ok"); !errors.Is(err, engine.ErrRecordNotFound) {
		t.Fatalf("success record past its retention: err = %v, want not found", err)
	}
	if _, err := m.Get(ctx, "bad"); err != nil {
		t.Fatalf("error record within its retention: %v", err)
	}
}

func TestMemory_HoldsAtMostMaxRecords(t *testing.T) {
	m := NewMemory(MemoryOptions{Retention: Retention{MaxRecords: 3}})
	ctx := context.Background()
	for i := range 10 {
		if err := m.Put(ctx, &engine.ExecutionRecord{RequestID: string(rune('a' + i)), Status: engine.RecordSucceeded, Revision: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.records.Len(); n != 3 {
		t.Fatalf("store holds %d records, want 3", n)
	}
	if _, err := m.Get(ctx, "j"); err != nil {
		t.Fatalf("newest record evicted: %v", err)
	}
	if _, err := m.Get(ctx, "a"); !errors.Is(err, engine.ErrRecordNotFound) {
		t.Fatalf("oldest record kept: %v", err)
	}
}

// TestHardening_FailedRecordsOutliveAFloodOfNewIDs: records of failed requests have
// space of their own, so a flood of new requests does not evict them before their
// retention; a failed request's id opened again serves the new record, and a record's
// revision gate holds across both.
func TestHardening_FailedRecordsOutliveAFloodOfNewIDs(t *testing.T) {
	m := NewMemory(MemoryOptions{Retention: Retention{MaxRecords: 10}, MaxFailedRecords: 3})
	ctx := context.Background()
	put := func(id string, status engine.RecordStatus, revision int64) error {
		return m.Put(ctx, &engine.ExecutionRecord{RequestID: id, Status: status, Revision: revision})
	}
	for _, id := range []string{"refused-1", "refused-2"} {
		if err := put(id, engine.RecordRunning, 1); err != nil {
			t.Fatal(err)
		}
		if err := put(id, engine.RecordFailed, 2); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1000 {
		if err := put(fmt.Sprintf("flood-%d", i), engine.RecordSucceeded, 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"refused-1", "refused-2"} {
		rec, err := m.Get(ctx, id)
		if err != nil || rec.Status != engine.RecordFailed || rec.Revision != 2 {
			t.Fatalf("failed record %s after the flood: %+v, %v", id, rec, err)
		}
	}
	if err := put("refused-1", engine.RecordRunning, 2); !errors.Is(err, engine.ErrStaleRevision) {
		t.Fatalf("a stale write over a failed record: %v", err)
	}
	if err := put("refused-1", engine.RecordRunning, 3); err != nil {
		t.Fatal(err)
	}
	if rec, err := m.Get(ctx, "refused-1"); err != nil || rec.Status != engine.RecordRunning || rec.Revision != 3 {
		t.Fatalf("reopened id serves %+v, %v", rec, err)
	}
	for i := range 20 {
		if err := put(fmt.Sprintf("flood-again-%d", i), engine.RecordSucceeded, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Get(ctx, "refused-1"); !errors.Is(err, engine.ErrRecordNotFound) {
		t.Fatalf("the reopened id's record, evicted, still answers its earlier failed record: %v", err)
	}
	for i := range 5 {
		if err := put(fmt.Sprintf("failed-%d", i), engine.RecordFailed, 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.failed.Len(); n != 3 {
		t.Fatalf("%d failed records held, want the bound 3", n)
	}
}
