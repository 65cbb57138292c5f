package engine

import (
	"context"
	"maps"
	"slices"
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
	PhasesIndependent bool              `json:"phases_independent,omitempty"`
	InvalidPlanFails  bool              `json:"invalid_plan_fails,omitempty"`
	Lifecycle         RequestLifecycle  `json:"lifecycle,omitempty"`
	OpenedAt          time.Time         `json:"opened_at"`
	PriorSteps        []RoutingStep     `json:"prior_steps,omitempty"`
	Phase             int               `json:"phase,omitempty"`
	// PhasePlanID is the plan_id of the last accepted phase's incoming plan, PhaseHash
	// the SHA-256 of that plan's JSON encoding and PhaseStart the index in PriorSteps
	// where that phase's steps begin: a call that re-sends exactly that plan is answered
	// from the record instead of starting a new phase.
	PhasePlanID string `json:"phase_plan_id,omitempty"`
	PhaseHash   string `json:"phase_hash,omitempty"`
	PhaseStart  int    `json:"phase_start,omitempty"`
	// Runs says, per accepted step id, how far its execution went (plan binding).
	Runs map[string]*StepRun `json:"runs,omitempty"`
	// Labels is the union of the labels of every result the request reported, sorted;
	// History the last MaxHistory of its reported finishes, in order, and Reported
	// how many it reported in all; PhaseFlows says, per accepted phase, what it had
	// reported when that phase's review began (docs/semantics.md §8.21). Like the
	// accepted steps they never change once stored: a change replaces them.
	Labels     []string      `json:"labels,omitempty"`
	History    []HistoryStep `json:"history,omitempty"`
	Reported   int           `json:"reported,omitempty"`
	PhaseFlows []PhaseFlow   `json:"phase_flows,omitempty"`
	// Held lists, by step id, the accepted steps of a round an entry point keeps
	// waiting for approvals (Session.HoldRound); HoldOf is set on a hold entry alone,
	// the state stored under a held round's key, and names the request it holds
	// (Driver.HeldRound). A hold entry is no request: it is never resumed.
	Held   []string `json:"held,omitempty"`
	HoldOf string   `json:"hold_of,omitempty"`
	// Revision grows with every write; a store never lets a write based on an older
	// revision replace a newer one.
	Revision int64 `json:"revision"`

	// TraceParent is the W3C traceparent of the call that opened the request, when it
	// carried trace context: a later call without its own is in that trace (telemetry).
	TraceParent string `json:"traceparent,omitempty"`
}

// RunStatus is how far the execution of an accepted step went.
type RunStatus string

// Run statuses.
const (
	// RunStarted: a check allowed the step; its finish has not been reported.
	RunStarted RunStatus = "started"
	// RunSucceeded and RunFailed: its finish was reported.
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
)

// StepRun is what the driver knows of the execution of one accepted step.
type StepRun struct {
	Status RunStatus `json:"status"`
	// Retryable is set by a failed finish that allows another attempt.
	Retryable bool `json:"retryable,omitempty"`
	Attempts  int  `json:"attempts"`
	// Response is the step's reported response, once known: the value
	// {{<step>.response.…}} references resolve against.
	Response any `json:"response,omitempty"`
	// Labels are the labels its reported result got.
	Labels []string `json:"labels,omitempty"`
}

// StateStore keeps request states between stage calls. Implementations must be safe
// for concurrent use and must store a copy: the caller may change state after
// PutRequest returns, and GetRequest returns a value the caller owns.
type StateStore interface {
	// GetRequest returns the state of request id; ok is false when unknown or expired.
	GetRequest(ctx context.Context, id string) (state *RequestState, ok bool, err error)
	// PutRequest stores state for ttl (0 means the store's default) unless the stored
	// state of state.ID has a revision greater than or equal to state.Revision, in which
	// case it returns ErrStaleRevision and changes nothing. The check and the write are
	// one atomic step, so of two writers that read the same revision only one wins.
	// Accepted steps (PriorSteps) and runs (Runs) never change once stored: a store
	// may share them between the states it is given and the states it returns
	// (CloneState does).
	PutRequest(ctx context.Context, state *RequestState, ttl time.Duration) error
}

// RunStore is a StateStore that can store one step's run as the next revision of a
// request's state without the state being written whole: the fast path of a claim
// (the driver falls back to PutRequest when a store has none).
type RunStore interface {
	// PutRun stores runs as the runs of the state of request id, as revision revision,
	// keeping the rest of the state, unless the stored state's revision is not
	// revision-1 (or there is none), in which case it returns ErrStaleRevision and
	// changes nothing. runs differs from the stored state's runs in the run of step
	// alone; like every runs map it never changes once stored, so the store may keep
	// it. The check and the write are one atomic step. ttl is as for PutRequest.
	PutRun(ctx context.Context, id string, revision int64, step string, runs map[string]*StepRun, ttl time.Duration) error
}

// DeferringStore is a store whose writes can wait to be durable together, so that the
// writes of one call cost one commit. The state and record writes (PutRequest, PutRun,
// Put) made with the context Defer returns, or one derived from it, return once the
// store has decided them (revision-gated as ever; later reads see them) without
// waiting for them to be durable; flush returns once every one of them is as durable
// as a write made without Defer (with the first failure among them, a store failure).
// The caller calls flush exactly once, before it answers anyone about those writes;
// a write made with the context after flush waits for itself. Defer on a context
// that already defers this store's writes returns it and a flush with nothing to do.
// The driver defers the writes of a stage call's commit (state, then record) and of
// an operation check (a bound step's claim, then the record).
type DeferringStore interface {
	Defer(ctx context.Context) (deferred context.Context, flush func() error)
}

// runOf returns the run of step id for a change, adding it when there is none. The
// runs map and its runs are shared between stored revisions (CloneState) and never
// change once stored, so it replaces the map with a copy and the run with a copy first.
// A change that writes several runs takes the map once (writableRuns) and each run from
// it (newRun).
func (st *RequestState) runOf(id string) *StepRun { return newRun(st.writableRuns(), id) }

// writableRuns replaces st.Runs with a copy a change may write and returns it. The copy
// is a clone of the map's table, not a rehash of its entries: a claim copies every
// run's pointer once, however many steps the request ran.
func (st *RequestState) writableRuns() map[string]*StepRun {
	runs := maps.Clone(st.Runs)
	if runs == nil {
		runs = make(map[string]*StepRun, 1)
	}
	st.Runs = runs
	return runs
}

// newRun puts a copy of the run of step id (a new run when there is none) into runs, a
// map from writableRuns, and returns it.
func newRun(runs map[string]*StepRun, id string) *StepRun {
	run := &StepRun{}
	if prev := runs[id]; prev != nil {
		*run = *prev
	}
	runs[id] = run
	return run
}

// CloneState returns a copy of st sharing no memory with it that either may change: the
// metadata, enrichments and cache dimensions are deep-copied. Accepted steps and runs
// never change once stored (the driver copies steps into the state when it accepts them
// and only appends after them; runOf replaces the runs map it changes), so they are
// shared, PriorSteps clipped so that an append on either side never writes into the
// other's array. Values the metadata or enrichments hold that are
// not JSON-shaped fail with a *CloneError.
func CloneState(st *RequestState) (*RequestState, error) {
	out := *st
	var err error
	if out.Metadata, err = cloneMap(st.Metadata); err != nil {
		return nil, err
	}
	if out.Enrichments, err = cloneMap(st.Enrichments); err != nil {
		return nil, err
	}
	out.CacheVary = cloneStrings(st.CacheVary)
	out.PriorSteps = slices.Clip(st.PriorSteps)
	return &out, nil
}

func cloneMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	c, err := CloneValue(m)
	if err != nil {
		return nil, err
	}
	return c.(map[string]any), nil
}
