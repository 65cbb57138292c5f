package store

import (
	"strings"

	"context"
	"fmt"
	"github.com/agentd-dev/agentd/engine"
	"testing"
	"time"
)

func TestMemory_CacheIsBounded(t *testing.T) {
	m := NewMemory(MemoryOptions{MaxEntries: 3})
	ctx := context.Background()
	for i := range 10 {
		if err := m.PutCache(ctx, fmt.Sprint(i), CacheEntry{Response: "x"}, time.Duration(i+1)*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.cache.Len(); n != 3 {
		t.Fatalf("cache holds %d entries, want 3", n)
	}
	if _, ok, _ := m.GetCache(ctx, "9"); !ok {
		t.Fatal("newest entry evicted")
	}
}

// Request states and records are bounded by their bytes, not only their count: many
// requests with large metadata evict the oldest instead of growing the process.
func TestHardening_MemoryStoreIsBoundedByBytes(t *testing.T) {
	m := NewMemory(MemoryOptions{MaxBytes: 2 << 20})
	ctx := context.Background()
	blob := strings.Repeat("x", 200<<10)
	for i := range 40 {
		st := &engine.RequestState{ID: fmt.Sprint("r", i), Revision: 1, Metadata: map[string]any{"blob": blob}}
		if err := m.PutRequest(ctx, st, time.Minute); err != nil {
			t.Fatal(err)
		}
		rec := &engine.ExecutionRecord{RequestID: st.ID, Revision: 1, FinalResponse: blob}
		if err := m.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if b := m.requests.Bytes(); b > 1<<20 {
		t.Fatalf("request states hold %d bytes, over half the budget", b)
	}
	if b := m.records.Bytes(); b > 1<<20 {
		t.Fatalf("records hold %d bytes, over half the budget", b)
	}
	if _, ok, _ := m.GetRequest(ctx, "r39"); !ok {
		t.Fatal("the newest state was evicted")
	}
}

// Rate-limit windows are bounded: unique keys cannot grow the limiter without bound.
func TestHardening_RateLimitWindowsAreBounded(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	ctx := context.Background()
	for i := range maxWindows + 500 {
		if _, err := m.Allow(ctx, fmt.Sprint("k", i), 1, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.windows.Len(); n > maxWindows {
		t.Fatalf("%d windows kept, over %d", n, maxWindows)
	}
}
