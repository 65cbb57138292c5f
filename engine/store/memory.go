package store

import (
	"context"
	"maps"
	"sync"
	"time"
)

// DefaultCacheTTL applies when PutCache is given no ttl.
const DefaultCacheTTL = 10 * time.Minute

// Memory is an in-process Cache and Limiter. It bounds itself: expired entries are
// swept on write and the cache holds at most maxEntries entries (the oldest-expiring
// are evicted first when full).
type Memory struct {
	mu         sync.Mutex
	cache      map[string]memoryCacheEntry
	windows    map[string]window
	maxEntries int
	now        func() time.Time
}

type memoryCacheEntry struct {
	entry   CacheEntry
	expires time.Time
}

type window struct {
	start  time.Time
	length time.Duration
	count  int
}

// maxWindows is the number of rate-limit windows above which finished ones are swept.
const maxWindows = 10_000

// NewMemory returns an empty store holding at most maxEntries cache entries (0 means
// 10,000).
func NewMemory(maxEntries int) *Memory {
	if maxEntries <= 0 {
		maxEntries = 10_000
	}
	return &Memory{cache: map[string]memoryCacheEntry{}, windows: map[string]window{}, maxEntries: maxEntries, now: time.Now}
}

// GetCache implements Cache.
func (m *Memory) GetCache(ctx context.Context, key string) (CacheEntry, bool, error) {
	if err := ctx.Err(); err != nil {
		return CacheEntry{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.cache[key]
	if !ok || !m.now().Before(e.expires) {
		return CacheEntry{}, false, nil
	}
	out := e.entry
	out.CachedAgainst = maps.Clone(e.entry.CachedAgainst)
	return out, true, nil
}

// PutCache implements Cache.
func (m *Memory) PutCache(ctx context.Context, key string, e CacheEntry, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	e.CachedAgainst = maps.Clone(e.CachedAgainst)
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if _, exists := m.cache[key]; !exists && len(m.cache) >= m.maxEntries {
		m.evict(now)
	}
	m.cache[key] = memoryCacheEntry{entry: e, expires: now.Add(ttl)}
	return nil
}

// evict drops expired entries, or else the entry closest to expiry.
func (m *Memory) evict(now time.Time) {
	var victim string
	var soonest time.Time
	for k, e := range m.cache {
		if !now.Before(e.expires) {
			delete(m.cache, k)
			continue
		}
		if victim == "" || e.expires.Before(soonest) {
			victim, soonest = k, e.expires
		}
	}
	if len(m.cache) >= m.maxEntries {
		delete(m.cache, victim)
	}
}

// Allow implements Limiter with fixed windows aligned to the first event.
func (m *Memory) Allow(ctx context.Context, key string, limit int, length time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	w, ok := m.windows[key]
	if !ok || now.Sub(w.start) >= w.length {
		if !ok && len(m.windows) >= maxWindows {
			m.sweepWindows(now)
		}
		w = window{start: now, length: length}
	}
	w.count++
	m.windows[key] = w
	return w.count <= limit, nil
}

func (m *Memory) sweepWindows(now time.Time) {
	for k, w := range m.windows {
		if now.Sub(w.start) >= w.length {
			delete(m.windows, k)
		}
	}
}

var (
	_ Cache   = (*Memory)(nil)
	_ Limiter = (*Memory)(nil)
)
