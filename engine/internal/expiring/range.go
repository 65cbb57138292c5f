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
