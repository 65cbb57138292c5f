package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/engine/internal/expiring"
)

// DefaultCacheTTL applies when PutCache is given no ttl.
const DefaultCacheTTL = 10 * time.Minute

// DefaultRequestTTL applies when PutRequest is given no ttl.
const DefaultRequestTTL = 30 * time.Minute

// Memory is an in-process Requests, Cache and Limiter. It bounds itself: the cache and
// the request states each hold at most maxEntries entries (expired ones are swept
// first, then the ones closest to expiry are evicted).
type Memory struct {
	mu       sync.Mutex
	cache    *expiring.Map[CacheEntry]
	requests *expiring.Map[[]byte]
	windows  map[string]window
	now      func() time.Time
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
		cache: expiring.New[CacheEntry](maxEntries), requests: expiring.New[[]byte](maxEntries),
		windows: map[string]window{}, now: time.Now,
	}
}

// GetCache implements Cache.
func (m *Memory) GetCache(ctx context.Context, key string) (CacheEntry, bool, error) {
	if err := ctx.Err(); err != nil {
		return CacheEntry{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.cache.Get(key, m.now())
	if !ok {
		return CacheEntry{}, false, nil
	}
	e.CachedAgainst = maps.Clone(e.CachedAgainst)
	return e, true, nil
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
	m.cache.Put(key, e, now.Add(ttl))
	return nil
}

// GetRequest implements Requests. States are stored JSON-encoded, so callers never
// alias stored state, exactly as with a remote store.
func (m *Memory) GetRequest(ctx context.Context, id string) (*RequestState, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	data, ok := m.requests.Get(id, m.now())
	m.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	var s RequestState
	if err := json.Unmarshal(data, &s); err != nil {
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
	m.requests.Put(s.ID, data, m.now().Add(ttl))
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
