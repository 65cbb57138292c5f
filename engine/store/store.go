// Package store holds the request-scoped shared state of agentd's built-in actions: the
// response cache and rate-limit counters. Memory is the in-process default; every
// implementation passes the same conformance suite (storetest).
package store

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable wraps every failure to reach a store's backend, so callers can tell
// "the store is down" from "the key is absent".
var ErrUnavailable = errors.New("store unavailable")

// CacheEntry is one cached answer and the variation map it was stored against.
type CacheEntry struct {
	Response      string            `json:"response"`
	Source        string            `json:"source,omitempty"`
	CachedAgainst map[string]string `json:"cached_against,omitempty"`
	StoredAt      time.Time         `json:"stored_at"`
}

// Cache is a response cache. Keys are opaque; callers put the config generation in the
// key so a rule change never serves an answer cached under old rules.
type Cache interface {
	// GetCache returns the entry for key; ok is false when absent or expired.
	GetCache(ctx context.Context, key string) (entry CacheEntry, ok bool, err error)
	// PutCache stores e under key for ttl (0 means the store's default).
	PutCache(ctx context.Context, key string, e CacheEntry, ttl time.Duration) error
}

// Limiter counts events per key in fixed windows.
type Limiter interface {
	// Allow records one event for key and reports whether it is within limit events
	// per window.
	Allow(ctx context.Context, key string, limit int, window time.Duration) (bool, error)
}
