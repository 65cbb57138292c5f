package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultStateTTL is how long a request's state is kept between stage calls when
// DriverConfig.StateTTL is 0.
const DefaultStateTTL = 30 * time.Minute

// DriverConfig configures a Driver. Generations is required.
type DriverConfig struct {
	Generations Generations
	// States keeps request states between calls. Nil keeps a request's state only in
	// its Session, which then must serve the whole request (as Lifecycle does).
	States StateStore
	// Records keeps execution records. Nil keeps a request's record only in its
	// Session (see Session.Record).
	Records RecordStore
	// StateTTL is how long a request's state is kept after its last call; 0 means
	// DefaultStateTTL.
	StateTTL time.Duration
	// Observer is told about every finished call; nil tells no one.
	Observer Observer
	// MaxRecordEntries bounds the entries (hook invocations, operation checks, plan
	// rejections) one execution record may hold; 0 means DefaultMaxRecordEntries. A
	// call that would go over is refused (RefusedTooLarge).
	MaxRecordEntries int
	// KeepPlans says the callers never change a plan after giving it to
	// Session.AfterPlanning, nor the plan it returns, as the daemon's handlers and
	// gateways do (each decodes or builds new values per call and only reads the
	// answer): the request's state and record then keep those plans as they are
	// instead of a copy of each.
	KeepPlans bool
}

// DefaultMaxRecordEntries applies when DriverConfig.MaxRecordEntries is 0.
const DefaultMaxRecordEntries = 10_000

// Driver is the one request driver: every entry point (the HTTP API, the gateways,
// `agentd eval`, the pipeline cases of `agentd test` and the Go Lifecycle) runs a
// request's stages through it. It opens or loads the request's state, pins the
// generation the request opened on, runs one stage on it, writes the request's state
// and its execution record through one revision-gated path, and checks operations.
//
// A Driver is safe for concurrent use. The calls of one request are expected in
// lifecycle order, not concurrently; concurrent record writes of one request (late
// effect updates, two replicas) are serialized by the record store's revision gate.
// The contract is docs/semantics.md §8.
type Driver struct {
	gens       Generations
	states     StateStore
	records    RecordStore
	ttl        time.Duration
	observer   Observer
	maxEntries int
	keepPlans  bool
	now        func() time.Time
}

// NewDriver returns a driver.
func NewDriver(cfg DriverConfig) (*Driver, error) {
	if cfg.Generations == nil {
		return nil, errors.New("engine: a driver needs Generations")
	}
	if cfg.StateTTL <= 0 {
		cfg.StateTTL = DefaultStateTTL
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.MaxRecordEntries <= 0 {
		cfg.MaxRecordEntries = DefaultMaxRecordEntries
	}
	return &Driver{gens: cfg.Generations, states: cfg.States, records: cfg.Records, ttl: cfg.StateTTL,
		observer: cfg.Observer, maxEntries: cfg.MaxRecordEntries, keepPlans: cfg.KeepPlans, now: time.Now}, nil
}

// RefusalCode is why the driver refused a call before running any hook. The codes are
// bounded and safe as metric labels.
type RefusalCode string

// Refusal codes.
const (
	// RefusedNotReady: no generation is live yet.
	RefusedNotReady RefusalCode = "not_ready"
	// RefusedGenerationRetired: the request's generation is no longer kept.
	RefusedGenerationRetired RefusalCode = "generation_retired"
	// RefusedStoreUnavailable: the state or record store could not be reached.
	RefusedStoreUnavailable RefusalCode = "store_unavailable"
	// RefusedRequestFailed: the request failed (a terminating rejection); it takes no
	// more stage calls or checks, and its id cannot be opened again while its state
	// is kept.
	RefusedRequestFailed RefusalCode = "request_failed"
	// RefusedGenerationExpired: the request has run on its generation for longer than
	// the generation's max_request_age.
	RefusedGenerationExpired RefusalCode = "generation_expired"
	// RefusedConflict: the request's state kept changing under the call.
	RefusedConflict RefusalCode = "conflict"
	// RefusedTenantForbidden: the call is confined to a tenant (WithTenant) and the
	// request belongs to another one, or to none.
	RefusedTenantForbidden RefusalCode = "tenant_forbidden"
	// RefusedTooLarge: the request's state or record would outgrow its limit.
	RefusedTooLarge RefusalCode = "request_too_large"
)

// RefusalCodes are all the refusal codes, in declaration order.
var RefusalCodes = []RefusalCode{RefusedNotReady, RefusedGenerationRetired, RefusedStoreUnavailable, RefusedRequestFailed,
	RefusedGenerationExpired, RefusedConflict, RefusedTenantForbidden, RefusedTooLarge}

// RefusalClass groups refusal codes by what the caller can do about them; adapters
// (the HTTP API, the gateways) answer by class (api.StatusOf), never by code.
type RefusalClass string

// Refusal classes.
const (
	// ClassNotReady: the daemon has no live generation yet (RefusedNotReady).
	ClassNotReady RefusalClass = "not_ready"
	// ClassConflict: the request's state does not admit the call as it stands
	// (RefusedConflict, RefusedRequestFailed, RefusedGenerationRetired,
	// RefusedGenerationExpired).
	ClassConflict RefusalClass = "conflict"
	// ClassForbidden: the caller may not touch the request (RefusedTenantForbidden).
	ClassForbidden RefusalClass = "forbidden"
	// ClassTooLarge: the request outgrew a limit (RefusedTooLarge).
	ClassTooLarge RefusalClass = "too_large"
	// ClassUnavailable: a store could not be reached (RefusedStoreUnavailable, and any
	// code this version does not know).
	ClassUnavailable RefusalClass = "unavailable"
)

// Class returns the class of c; a code this version does not know is
// ClassUnavailable.
func (c RefusalCode) Class() RefusalClass {
	switch c {
	case RefusedNotReady:
		return ClassNotReady
	case RefusedConflict, RefusedRequestFailed, RefusedGenerationRetired, RefusedGenerationExpired:
		return ClassConflict
	case RefusedTenantForbidden:
		return ClassForbidden
	case RefusedTooLarge:
		return ClassTooLarge
	}
	return ClassUnavailable
}

// Final reports whether a call refused with c refuses every later call of the same
// request too: the request failed, its generation is gone or expired, it outgrew its
// limit, or it belongs to another tenant. A caller holding a session on the request
// (an MCP session) has to open a new request to go on.
func (c RefusalCode) Final() bool {
	switch c {
	case RefusedRequestFailed, RefusedGenerationRetired, RefusedGenerationExpired, RefusedTooLarge, RefusedTenantForbidden:
		return true
	}
	return false
}

// Retryable reports whether the same call may succeed if made again unchanged: the
// class is ClassConflict or ClassUnavailable and the code is not Final.
func (c RefusalCode) Retryable() bool {
	class := c.Class()
	return (class == ClassConflict || class == ClassUnavailable) && !c.Final()
}

// ErrTooLarge is wrapped by a store's error for a request state or an execution
// record over the store's per-request limit, and by the driver's for a record over
// DriverConfig.MaxRecordEntries. The call is refused (RefusedTooLarge); nothing is
// written.
var ErrTooLarge = errors.New("too large")

// RefusalError reports a call the driver refused before running any hook. Err is the
// cause (a store error, say); it is for logs, not for clients.
type RefusalError struct {
	Code       RefusalCode
	RequestID  string
	Generation string
	Err        error
}

func (e *RefusalError) Error() string {
	switch e.Code {
	case RefusedNotReady:
		return "no config generation is live"
	case RefusedGenerationRetired:
		return fmt.Sprintf("request %q runs on config generation %s, which is no longer retained", e.RequestID, e.Generation)
	case RefusedRequestFailed:
		return fmt.Sprintf("request %q failed; it takes no more stage calls or checks", e.RequestID)
	case RefusedGenerationExpired:
		return fmt.Sprintf("request %q has run on config generation %s for longer than its max_request_age", e.RequestID, e.Generation)
	case RefusedConflict:
		return fmt.Sprintf("request %q changed concurrently; retry the call", e.RequestID)
	case RefusedTenantForbidden:
		return fmt.Sprintf("request %q does not belong to the caller's tenant", e.RequestID)
	case RefusedTooLarge:
		return fmt.Sprintf("request %q: %v", e.RequestID, e.Err)
	}
	return fmt.Sprintf("request %q: %s: %v", e.RequestID, e.Code, e.Err)
}

func (e *RefusalError) Unwrap() error { return e.Err }

// AsRefusal finds a *RefusalError in err's chain.
func AsRefusal(err error) (*RefusalError, bool) {
	var r *RefusalError
	ok := errors.As(err, &r)
	return r, ok
}

// StoreFailure is the refusal of a store error of request id ("" for none, as a
// failed list): RefusedTooLarge for ErrTooLarge, else RefusedStoreUnavailable. An
// adapter answers a failed read of the stores with it (api.ErrorOf), as the driver
// does a failed write.
func StoreFailure(id string, err error) error { return storeFailure(id, err) }

// storeFailure is StoreFailure, for the driver's own store calls.
func storeFailure(id string, err error) error {
	if errors.Is(err, ErrTooLarge) {
		return &RefusalError{Code: RefusedTooLarge, RequestID: id, Err: err}
	}
	return &RefusalError{Code: RefusedStoreUnavailable, RequestID: id, Err: err}
}

// Opening is what a request starts from.
type Opening struct {
	Text     string
	Metadata map[string]any
	// Enrichments seed the request's enrichments before any hook runs.
	Enrichments       map[string]any
	CacheVary         map[string]string
	CacheReadDisabled bool
	// PhasesIndependent keeps the request open when the required hook rejects a phase:
	// the rejection is recorded and that phase refused, and the next phase is reviewed
	// afresh. For a session of independent calls (an MCP session), where one refused
	// call must not end the others; by default a rejection fails the request.
	PhasesIndependent bool
	// InvalidPlanFails fails the request when an incoming plan breaks a plan rule
	// (*PlanError), as a required hook's rejection does: for an entry point whose
	// planner cannot be asked again (a model's round of tool calls, answered once). By
	// default an invalid plan is refused and the request goes on, so the planner can
	// send a corrected one.
	InvalidPlanFails bool
}

// Open starts request id afresh on the live generation, for a before_planning call:
// its first record write replaces any record an earlier request with the same id left,
// unless that request failed and its state is still kept (RefusedRequestFailed: the
// evidence of a refusal is not overwritten). Nothing is written until the session's
// first stage call. A call confined to a tenant (WithTenant) may not replace a request
// of another tenant (RefusedTenantForbidden).
func (d *Driver) Open(ctx context.Context, id string, o Opening) (*Session, error) {
	old, err := d.load(ctx, id)
	if err != nil {
		return nil, d.refuse(ctx, StageBeforePlanning, id, err)
	}
	if old != nil {
		if err := CheckTenant(ctx, id, TenantOf(old.Metadata)); err != nil {
			return nil, d.refuse(ctx, StageBeforePlanning, id, err)
		}
	}
	if old != nil && old.Lifecycle == LifecycleFailed {
		return nil, d.refuse(ctx, StageBeforePlanning, id, &RefusalError{Code: RefusedRequestFailed, RequestID: id})
	}
	return d.open(ctx, StageBeforePlanning, id, o, old)
}

// open starts request id on the live generation; old is the state it replaces, if any.
// A call confined to a tenant opens only a request of that tenant, and replaces no
// record of another tenant that outlived its request's state.
func (d *Driver) open(ctx context.Context, stage Stage, id string, o Opening, old *RequestState) (*Session, error) {
	if err := d.checkOpening(ctx, id, o, old); err != nil {
		return nil, d.refuse(ctx, stage, id, err)
	}
	gen := d.gens.Live()
	if gen == nil {
		return nil, d.refuse(ctx, stage, id, &RefusalError{Code: RefusedNotReady, RequestID: id})
	}
	st := d.openState(id, gen, o)
	st.TraceParent = traceParentOf(ctx)
	if old != nil {
		st.Revision = old.Revision
	}
	return d.newSession(gen, st, true), nil
}

// Resume loads request id for a call of stage, or opens it from o (on the live
// generation) when it is unknown or its state expired. The request runs on the
// generation it opened on. It is refused when the call is confined to another tenant
// (RefusedTenantForbidden), when that generation is no longer kept
// (RefusedGenerationRetired), when the request has run on it for longer than its
// max_request_age (RefusedGenerationExpired) and when the request failed
// (RefusedRequestFailed).
func (d *Driver) Resume(ctx context.Context, stage Stage, id string, o Opening) (*Session, error) {
	st, err := d.load(ctx, id)
	if err != nil {
		return nil, d.refuse(ctx, stage, id, err)
	}
	if st == nil {
		return d.open(ctx, stage, id, o, nil)
	}
	gen, err := d.pinned(ctx, st)
	if err != nil {
		return nil, d.refuse(ctx, stage, id, err)
	}
	return d.newSession(gen, st, false), nil
}

// checkOpening refuses opening request id from o, in place of old (nil when none),
// to a call confined to another tenant than o's; when there is no old state, a record
// of another tenant that outlived its state is not replaced either.
func (d *Driver) checkOpening(ctx context.Context, id string, o Opening, old *RequestState) error {
	if _, ok := TenantFrom(ctx); !ok {
		return nil
	}
	if err := CheckTenant(ctx, id, TenantOf(o.Metadata)); err != nil {
		return err
	}
	if old != nil || d.records == nil {
		return nil
	}
	rec, err := d.records.Get(ctx, id)
	switch {
	case errors.Is(err, ErrRecordNotFound):
		return nil
	case err != nil:
		return storeFailure(id, err)
	}
	return CheckTenant(ctx, id, rec.Tenant)
}

// pinned returns the generation st runs on, or the refusal of a request that may not
// go on (with ctx: one of another tenant than ctx is confined to).
func (d *Driver) pinned(ctx context.Context, st *RequestState) (*Generation, error) {
	if err := CheckTenant(ctx, st.ID, TenantOf(st.Metadata)); err != nil {
		return nil, err
	}
	if st.Lifecycle == LifecycleFailed {
		return nil, &RefusalError{Code: RefusedRequestFailed, RequestID: st.ID, Generation: st.Generation}
	}
	gen := d.gens.Lookup(st.Generation)
	if gen == nil {
		return nil, &RefusalError{Code: RefusedGenerationRetired, RequestID: st.ID, Generation: st.Generation}
	}
	if gen.MaxRequestAge > 0 && !st.OpenedAt.IsZero() && d.now().Sub(st.OpenedAt) > gen.MaxRequestAge {
		return nil, &RefusalError{Code: RefusedGenerationExpired, RequestID: st.ID, Generation: st.Generation}
	}
	if st.Enrichments == nil {
		st.Enrichments = map[string]any{}
	}
	return gen, nil
}

// load returns the stored state of id, nil when unknown.
func (d *Driver) load(ctx context.Context, id string) (*RequestState, error) {
	if d.states == nil {
		return nil, nil
	}
	st, ok, err := d.states.GetRequest(ctx, id)
	if err != nil {
		return nil, storeFailure(id, err)
	}
	if !ok {
		return nil, nil
	}
	return st, nil
}

func (d *Driver) openState(id string, gen *Generation, o Opening) *RequestState {
	enrichments := make(map[string]any, len(o.Enrichments))
	for k, v := range o.Enrichments {
		enrichments[k] = v
	}
	return &RequestState{
		ID: id, Generation: gen.ID, Request: o.Text, Metadata: o.Metadata, Enrichments: enrichments,
		CacheVary: cloneStrings(o.CacheVary), CacheReadDisabled: o.CacheReadDisabled,
		PhasesIndependent: o.PhasesIndependent, InvalidPlanFails: o.InvalidPlanFails, Lifecycle: LifecycleOpen, OpenedAt: d.now().UTC(),
	}
}

// refuse tells the observer about a refused call of stage and returns err.
func (d *Driver) refuse(ctx context.Context, stage Stage, id string, err error) error {
	r, _ := AsRefusal(err)
	d.observer.Refused(context.WithoutCancel(ctx), stage, id, r)
	return err
}
