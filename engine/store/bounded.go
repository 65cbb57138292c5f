package store

import "time"

// boundedMap is a map of expiring entries holding at most max of them. When full it
// evicts in insertion order (the oldest write first), which for the near-constant TTLs
// of one kind of entry is also expiry order; every operation is O(1) amortized.
type boundedMap[T any] struct {
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

func newBoundedMap[T any](max int) *boundedMap[T] {
	return &boundedMap[T]{entries: map[string]boundedEntry[T]{}, max: max}
}

// get returns the live value under key.
func (m *boundedMap[T]) get(key string, now time.Time) (T, bool) {
	e, ok := m.entries[key]
	if !ok || !now.Before(e.expires) {
		var zero T
		return zero, false
	}
	return e.value, true
}

// put stores v under key until expires, first evicting the oldest write when full.
func (m *boundedMap[T]) put(key string, v T, expires time.Time) {
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

func (m *boundedMap[T]) evictOldest() {
	item := m.order[0]
	m.order = m.order[1:]
	if e, ok := m.entries[item.key]; ok && e.seq == item.seq {
		delete(m.entries, item.key)
	}
}

// compact drops stale order items (keys rewritten or evicted since).
func (m *boundedMap[T]) compact() {
	live := make([]orderItem, 0, len(m.entries))
	for _, item := range m.order {
		if e, ok := m.entries[item.key]; ok && e.seq == item.seq {
			live = append(live, item)
		}
	}
	m.order = live
}
