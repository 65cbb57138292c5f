package engine

import (
	"context"
	"time"
)

// RequestLifecycle says where a request stands as a whole, apart from whether its
// steps succeeded: open while stage calls are expected, completed after
// after_synthesis or an accepted short circuit, failed after a terminating rejection,
// abandoned when its state expired while it was still open. A record without a
// lifecycle (written before it existed) has unknown completion (docs/semantics.md §6.7).
type RequestLifecycle string

// Request lifecycles.
const (
	LifecycleOpen      RequestLifecycle = "open"
	LifecycleCompleted RequestLifecycle = "completed"
	LifecycleFailed    RequestLifecycle = "failed"
	LifecycleAbandoned RequestLifecycle = "abandoned"
)

// RequestState is what the driver keeps about a request between its stage calls: the
// config generation it runs on, its pipeline context and cache gate, where it stands,
// and the steps of its accepted phases (for plan validation of later phases).
type RequestState struct {
	ID                string            `json:"id"`
	Generation        string            `json:"generation"`
	Request           string            `json:"request"`
	Metadata          map[string]any    `json:"metadata,omitempty"`
	Enrichments       map[string]any    `json:"enrichments,omitempty"`
	CacheVary         map[string]string `json:"cache_vary,omitempty"`
	CacheReadDisabled bool              `json:"cache_read_disabled,omitempty"`
	Lifecycle         RequestLifecycle  `json:"lifecycle,omitempty"`
	OpenedAt          time.Time         `json:"opened_at"`
	PriorSteps        []RoutingStep     `json:"prior_steps,omitempty"`
	Phase             int               `json:"phase,omitempty"`
	// PhasePlanID is the plan_id of the last accepted phase's incoming plan and
	// PhaseStart the index in PriorSteps where that phase's steps begin: a call that
	// re-sends that plan is answered from the record instead of starting a new phase.
	PhasePlanID string `json:"phase_plan_id,omitempty"`
	PhaseStart  int    `json:"phase_start,omitempty"`
}

// StateStore keeps request states between stage calls. Implementations must be safe
// for concurrent use and must store a copy: the caller may change state after
// PutRequest returns, and GetRequest returns a value the caller owns.
type StateStore interface {
	// GetRequest returns the state of request id; ok is false when unknown or expired.
	GetRequest(ctx context.Context, id string) (state *RequestState, ok bool, err error)
	// PutRequest stores state for ttl (0 means the store's default).
	PutRequest(ctx context.Context, state *RequestState, ttl time.Duration) error
}
