// Package store holds agentd's shared state: request states between stage calls, the
// response cache and rate-limit counters. Memory is the in-process default; every
// implementation passes the same conformance suite (storetest).
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

// RequestState is what agentd keeps about a request between its stage calls: the config
// generation it runs on, its pipeline context and cache gate, and the steps of its
// accepted phases (for plan validation of later phases).
type RequestState struct {
	ID                string               `json:"id"`
	Generation        string               `json:"generation"`
	Request           string               `json:"request"`
	Metadata          map[string]any       `json:"metadata,omitempty"`
	Enrichments       map[string]any       `json:"enrichments,omitempty"`
	CacheVary         map[string]string    `json:"cache_vary,omitempty"`
	CacheReadDisabled bool                 `json:"cache_read_disabled,omitempty"`
	PriorSteps        []engine.RoutingStep `json:"prior_steps,omitempty"`
	Phase             int                  `json:"phase,omitempty"`
	// PhasePlanID is the plan_id of the last accepted phase's incoming plan and
	// PhaseStart the index in PriorSteps where that phase's steps begin: a call that
	// re-sends that plan is answered from the record instead of starting a new phase.
	PhasePlanID string `json:"phase_plan_id,omitempty"`
	PhaseStart  int    `json:"phase_start,omitempty"`
}

// Requests keeps request states between stage calls.
type Requests interface {
	// GetRequest returns the state of request id; ok is false when unknown or expired.
	GetRequest(ctx context.Context, id string) (state *RequestState, ok bool, err error)
	// PutRequest stores state for ttl (0 means the store's default).
	PutRequest(ctx context.Context, state *RequestState, ttl time.Duration) error
}
