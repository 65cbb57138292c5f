// Package expiring is a map of expiring entries with a size bound, shared by the
// in-process stores.
package expiring

import "time"

// Map holds expiring entries, at most max of them and, when a byte budget is set, at
// most that many bytes of them (each entry's size as its caller states it). When full it
// evicts in insertion order (the oldest write first), which for the near-constant TTLs
// of one kind of entry is also expiry order; every operation is O(1) amortized. A zero
// expiry never expires. It is not safe for concurrent use: callers hold their own lock.
type Map[T any] struct {
	entries  map[string]boundedEntry[T]
	order    []orderItem // write order; items whose seq no longer matches are stale
	seq      uint64
	max      int
	bytes    int64
	maxBytes int64
	onEvict  func(key string, v T)
}

type boundedEntry[T any] struct {
	value   T
	expires time.Time
	seq     uint64
	size    int64
}

type orderItem struct {
	key string
	seq uint64
}

// New returns an empty map holding at most max entries.
func New[T any](max int) *Map[T] {
	return &Map[T]{entries: map[string]boundedEntry[T]{}, max: max}
}

// NewSized returns an empty map holding at most max entries and maxBytes bytes of
// them (0: no byte budget); entries are sized by PutSized.
func NewSized[T any](max int, maxBytes int64) *Map[T] {
	return &Map[T]{entries: map[string]boundedEntry[T]{}, max: max, maxBytes: maxBytes}
}

// Len returns the number of entries, expired ones not yet evicted included.
func (m *Map[T]) Len() int { return len(m.entries) }

// Bytes returns the stated size of the entries held.
func (m *Map[T]) Bytes() int64 { return m.bytes }

// Get returns the live value under key.
func (m *Map[T]) Get(key string, now time.Time) (T, bool) {
	e, ok := m.entries[key]
	if !ok || (!e.expires.IsZero() && !now.Before(e.expires)) {
		var zero T
		return zero, false
	}
	return e.value, true
}

// Peek returns the value under key, expired or not, as long as the map holds it.
func (m *Map[T]) Peek(key string) (T, bool) {
	e, ok := m.entries[key]
	return e.value, ok
}

// Put stores v under key until expires, first evicting the oldest write when full.
func (m *Map[T]) Put(key string, v T, expires time.Time) { m.PutSized(key, v, 0, expires) }

// PutSized is Put for an entry of size bytes: it also evicts the oldest writes while
// the byte budget would be exceeded. An entry larger than the whole budget is stored
// after evicting everything else; callers refuse such entries first.
func (m *Map[T]) PutSized(key string, v T, size int64, expires time.Time) {
	old, exists := m.entries[key]
	if exists {
		m.bytes -= old.size // rewritten in place below
	}
	for !exists && len(m.entries) >= m.max && len(m.order) > 0 {
		m.evictOldest(key)
	}
	for m.maxBytes > 0 && m.bytes+size > m.maxBytes && len(m.order) > 0 {
		m.evictOldest(key)
	}
	m.seq++
	m.bytes += size
	m.entries[key] = boundedEntry[T]{value: v, expires: expires, seq: m.seq, size: size}
	m.order = append(m.order, orderItem{key: key, seq: m.seq})
	if len(m.order) > 2*m.max+64 {
		m.compact()
	}
}

// evictOldest evicts the oldest write, unless it is of key, which is being rewritten:
// then only its order item goes (the rewrite adds a new one).
func (m *Map[T]) evictOldest(rewriting string) {
	item := m.order[0]
	m.order = m.order[1:]
	if item.key == rewriting {
		return
	}
	if e, ok := m.entries[item.key]; ok && e.seq == item.seq {
		delete(m.entries, item.key)
		m.bytes -= e.size
		if m.onEvict != nil {
			m.onEvict(item.key, e.value)
		}
	}
}

// OnEvict makes the map call fn with every entry a Put evicts to stay within its
// bounds (not with entries Delete or Sweep remove: their callers know them), so that
// a store keeping the entries elsewhere too can drop them there.
func (m *Map[T]) OnEvict(fn func(key string, v T)) { m.onEvict = fn }

// Delete removes the entry under key, if any.
func (m *Map[T]) Delete(key string) {
	if e, ok := m.entries[key]; ok {
		delete(m.entries, key)
		m.bytes -= e.size
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
