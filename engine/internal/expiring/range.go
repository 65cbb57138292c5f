package expiring

import "time"

// Range calls fn with every live entry, in no particular order, until fn returns false.
func (m *Map[T]) Range(now time.Time, fn func(key string, v T) bool) {
	for k, e := range m.entries {
		if !e.expires.IsZero() && !now.Before(e.expires) {
			continue
		}
		if !fn(k, e.value) {
			return
		}
	}
}

// Sweep removes expired entries, examining at most limit entries from a random place
// (Go's map order), and calls fn with each it removes: repeated sweeps reach every
// entry while each costs at most limit steps.
func (m *Map[T]) Sweep(now time.Time, limit int, fn func(key string, v T)) {
	for k, e := range m.entries {
		if limit--; limit < 0 {
			return
		}
		if !e.expires.IsZero() && !now.Before(e.expires) {
			delete(m.entries, k)
			m.bytes -= e.size
			fn(k, e.value)
		}
	}
}
