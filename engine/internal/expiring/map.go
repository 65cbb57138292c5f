// Package expiring is a map of expiring entries with a size bound, shared by the
// in-process stores.
package expiring

import "time"

// Map holds expiring entries, at most max of them. When full it evicts in insertion
// order (the oldest write first), which for the near-constant TTLs of one kind of entry
// is also expiry order; every operation is O(1) amortized. A zero expiry never expires.
// It is not safe for concurrent use: callers hold their own lock.
type Map[T any] struct {
	entries map[string]boundedEntry[T]
	order   []orderItem // write order; items whose seq no longer matches are stale
	seq     uint64
	max     int
}

type boundedEntry[T any] struct {
	value   T
	expires time.Time
	seq     uint64
}

type orderItem struct {
	key string
	seq uint64
}

// New returns an empty map holding at most max entries.
func New[T any](max int) *Map[T] {
	return &Map[T]{entries: map[string]boundedEntry[T]{}, max: max}
}

// Len returns the number of entries, expired ones not yet evicted included.
func (m *Map[T]) Len() int { return len(m.entries) }

// Get returns the live value under key.
func (m *Map[T]) Get(key string, now time.Time) (T, bool) {
	e, ok := m.entries[key]
	if !ok || (!e.expires.IsZero() && !now.Before(e.expires)) {
		var zero T
		return zero, false
	}
	return e.value, true
}

// Put stores v under key until expires, first evicting the oldest write when full.
func (m *Map[T]) Put(key string, v T, expires time.Time) {
	if _, exists := m.entries[key]; !exists {
		for len(m.entries) >= m.max && len(m.order) > 0 {
			m.evictOldest()
		}
	}
	m.seq++
	m.entries[key] = boundedEntry[T]{value: v, expires: expires, seq: m.seq}
	m.order = append(m.order, orderItem{key: key, seq: m.seq})
	if len(m.order) > 2*m.max+64 {
		m.compact()
	}
}

func (m *Map[T]) evictOldest() {
	item := m.order[0]
	m.order = m.order[1:]
	if e, ok := m.entries[item.key]; ok && e.seq == item.seq {
		delete(m.entries, item.key)
	}
}

// compact drops stale order items (keys rewritten or evicted since).
func (m *Map[T]) compact() {
	live := make([]orderItem, 0, len(m.entries))
	for _, item := range m.order {
		if e, ok := m.entries[item.key]; ok && e.seq == item.seq {
			live = append(live, item)
		}
	}
	m.order = live
}
