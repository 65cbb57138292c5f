package store

import (
	"context"
	"errors"
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
