// Package store holds agentd's shared state: request states between stage calls
// (engine.StateStore), execution records (engine.RecordStore), the response cache and
// rate-limit counters. Memory is the in-process default and the redis sub-package the
// store replicas share; every implementation passes the conformance suite of each
// interface (storetest).
package store

import (
	"context"
	"errors"
	"time"

	"github.com/agentd-dev/agentd/engine"
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

// Retention says how long execution records are kept, by outcome, and how many at
// most; zero durations keep them until evicted. A running record is kept for the error
// retention.
type Retention struct {
	Success time.Duration
	Error   time.Duration
	// MaxRecords bounds the records an in-process store holds, the oldest written
	// going first; 0 means DefaultMaxRecords.
	MaxRecords int
}

// DefaultMaxRecords bounds Memory's records when Retention.MaxRecords is 0.
const DefaultMaxRecords = 10_000

// TTL returns how long a record with status is kept (0: until evicted).
func (r Retention) TTL(status engine.RecordStatus) time.Duration {
	if status == engine.RecordSucceeded {
		return r.Success
	}
	return r.Error
}
