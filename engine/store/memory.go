package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"
)

// DefaultCacheTTL applies when PutCache is given no ttl.
const DefaultCacheTTL = 10 * time.Minute

// DefaultRequestTTL applies when PutRequest is given no ttl.
const DefaultRequestTTL = 30 * time.Minute

// Memory is an in-process Requests, Cache and Limiter. It bounds itself: the cache and
// the request states each hold at most maxEntries entries (expired ones are swept
// first, then the ones closest to expiry are evicted).
type Memory struct {
	mu         sync.Mutex
	cache      map[string]expiring[CacheEntry]
	requests   map[string]expiring[[]byte]
	windows    map[string]window
	maxEntries int
	now        func() time.Time
}

type expiring[T any] struct {
	value   T
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
	return &Memory{
		cache: map[string]expiring[CacheEntry]{}, requests: map[string]expiring[[]byte]{},
		windows: map[string]window{}, maxEntries: maxEntries, now: time.Now,
	}
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
	out := e.value
	out.CachedAgainst = maps.Clone(e.value.CachedAgainst)
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
	put(m.cache, key, e, now.Add(ttl), m.maxEntries, now)
	return nil
}

// put stores v under key, first making room when the map is full: expired entries
// go, or else the entry closest to expiry.
func put[T any](entries map[string]expiring[T], key string, v T, expires time.Time, max int, now time.Time) {
	if _, exists := entries[key]; !exists && len(entries) >= max {
		var victim string
		var soonest time.Time
		for k, e := range entries {
			if !now.Before(e.expires) {
				delete(entries, k)
				continue
			}
			if victim == "" || e.expires.Before(soonest) {
				victim, soonest = k, e.expires
			}
		}
		if len(entries) >= max {
			delete(entries, victim)
		}
	}
	entries[key] = expiring[T]{value: v, expires: expires}
}

// GetRequest implements Requests. States are stored JSON-encoded, so callers never
// alias stored state, exactly as with a remote store.
func (m *Memory) GetRequest(ctx context.Context, id string) (*RequestState, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	e, ok := m.requests[id]
	m.mu.Unlock()
	if !ok || !m.now().Before(e.expires) {
		return nil, false, nil
	}
	var s RequestState
	if err := json.Unmarshal(e.value, &s); err != nil {
		return nil, false, fmt.Errorf("decode request state: %w", err)
	}
	return &s, true, nil
}

// PutRequest implements Requests.
func (m *Memory) PutRequest(ctx context.Context, s *RequestState, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode request state: %w", err)
	}
	if ttl <= 0 {
		ttl = DefaultRequestTTL
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	put(m.requests, s.ID, data, now.Add(ttl), m.maxEntries, now)
	return nil
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
	_ Requests = (*Memory)(nil)
	_ Cache    = (*Memory)(nil)
	_ Limiter  = (*Memory)(nil)
)
