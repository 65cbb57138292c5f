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

// A rewrite that needs more bytes than are free evicts the oldest other writes, even
// when the rewritten entry is the oldest write, and never itself.
func TestMap_AGrowingRewriteEvictsOthersOnly(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewSized[string](4, 100)
	for _, k := range []string{"a", "b", "c"} {
		m.PutSized(k, "v", 30, time.Time{})
	}
	m.PutSized("a", "v2", 60, time.Time{}) // 90 - 30 + 60 > 100: b goes, a's old write is skipped
	for k, kept := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, ok := m.Get(k, now); ok != kept {
			t.Errorf("%s kept = %v, want %v", k, ok, kept)
		}
	}
	if v, _ := m.Get("a", now); v != "v2" || m.Bytes() != 90 || m.Len() != 2 {
		t.Fatalf("a = %q, len %d bytes %d; want v2, 2, 90", v, m.Len(), m.Bytes())
	}
	m.PutSized("a", "v3", 150, time.Time{}) // larger than the budget: stored alone
	if v, _ := m.Get("a", now); v != "v3" || m.Bytes() != 150 || m.Len() != 1 {
		t.Fatalf("a = %q, len %d bytes %d; want v3, 1, 150", v, m.Len(), m.Bytes())
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

// OnEvict sees what a Put evicts, Delete frees an entry's bytes, and Sweep removes the
// expired entries it examines and reports them.
func TestMap_EvictionsAreReportedAndSweepsRemoveExpired(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewSized[int](3, 100)
	var evicted []string
	m.OnEvict(func(k string, _ int) { evicted = append(evicted, k) })
	m.PutSized("a", 1, 40, now.Add(time.Second))
	m.PutSized("b", 2, 40, time.Time{})
	m.PutSized("c", 3, 40, now.Add(time.Second)) // over the bytes: a goes
	if fmt.Sprint(evicted) != "[a]" || m.Bytes() != 80 {
		t.Fatalf("evicted %v, bytes %d; want [a], 80", evicted, m.Bytes())
	}
	m.Delete("b")
	m.Delete("missing")
	if _, ok := m.Get("b", now); ok || m.Bytes() != 40 || m.Len() != 1 {
		t.Fatalf("after Delete: len %d bytes %d", m.Len(), m.Bytes())
	}
	m.PutSized("d", 4, 10, time.Time{})
	if v, ok := m.Peek("c"); !ok || v != 3 {
		t.Fatalf("Peek of an expired entry not yet swept = %v, %v", v, ok)
	}
	var swept []string
	m.Sweep(now.Add(2*time.Second), 10, func(k string, _ int) { swept = append(swept, k) })
	if fmt.Sprint(swept) != "[c]" || m.Len() != 1 || m.Bytes() != 10 || fmt.Sprint(evicted) != "[a]" {
		t.Fatalf("swept %v, len %d bytes %d, evicted %v; want [c], 1, 10, [a]", swept, m.Len(), m.Bytes(), evicted)
	}
	if _, ok := m.Peek("c"); ok {
		t.Fatal("Peek finds a swept entry")
	}
	m.PutSized("e", 5, 10, now)
	m.Sweep(now, 0, func(k string, _ int) { t.Fatalf("a sweep of limit 0 removed %s", k) })
}
