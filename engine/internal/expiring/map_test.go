package expiring

import (
	"fmt"
	"testing"
	"time"
)

func TestMap_CountAndByteBudgetsEvictTheOldestWrites(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewSized[string](4, 100)
	for i := range 4 {
		m.PutSized(fmt.Sprint(i), "v", 20, time.Time{})
	}
	if m.Len() != 4 || m.Bytes() != 80 {
		t.Fatalf("len %d bytes %d", m.Len(), m.Bytes())
	}
	m.PutSized("big", "v", 60, time.Time{}) // over the count (0 goes) and the bytes (1 goes)
	for k, kept := range map[string]bool{"0": false, "1": false, "2": true, "3": true, "big": true} {
		if _, ok := m.Get(k, now); ok != kept {
			t.Errorf("%s kept = %v, want %v", k, ok, kept)
		}
	}
	if m.Bytes() != 100 {
		t.Fatalf("bytes %d, want 100", m.Bytes())
	}
	m.PutSized("3", "v", 5, time.Time{}) // a rewrite replaces its own size
	if m.Bytes() != 85 || m.Len() != 3 {
		t.Fatalf("after a rewrite: len %d bytes %d", m.Len(), m.Bytes())
	}
	for i := range 1000 {
		m.PutSized("k", "v", int64(i%7), time.Time{})
	}
	if m.Len() != 4 || m.Bytes() != 85+int64(999%7) || len(m.order) > 2*m.max+64 {
		t.Fatalf("after rewrites of one key: len %d bytes %d order %d", m.Len(), m.Bytes(), len(m.order))
	}
}

func TestMap_ExpiredEntriesAreNotServed(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := New[int](10)
	m.Put("a", 1, now.Add(time.Second))
	if _, ok := m.Get("a", now.Add(2*time.Second)); ok {
		t.Fatal("expired entry served")
	}
}
