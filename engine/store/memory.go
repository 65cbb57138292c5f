package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/expiring"
)

// DefaultCacheTTL applies when PutCache is given no ttl.
const DefaultCacheTTL = 10 * time.Minute

// DefaultRequestTTL applies when PutRequest is given no ttl.
const DefaultRequestTTL = engine.DefaultStateTTL

// MemoryOptions configure a Memory. The zero value is valid.
type MemoryOptions struct {
	// MaxEntries bounds the cache entries and the request states, each; 0 means 10,000.
	MaxEntries int
	// Retention says how long records are kept and how many at most.
	Retention Retention
	// MaxFailedRecords bounds the records of failed requests, kept apart from the
	// others so that a flood of new requests cannot evict them before their retention;
	// 0 means Retention.MaxRecords.
	MaxFailedRecords int
	// MaxBytes bounds the bytes the request states and the records hold, half each
	// (the oldest written go first), the records' half shared evenly by the records of
	// failed requests and the others; 0 means DefaultMaxBytes.
	MaxBytes int64
	// MaxStateBytes and MaxRecordBytes bound one request's state and record; a write
	// over the limit fails with engine.ErrTooLarge. 0 means the defaults.
	MaxStateBytes, MaxRecordBytes int64
}

// Defaults of MemoryOptions' byte bounds.
const (
	DefaultMaxBytes       = 512 << 20
	DefaultMaxStateBytes  = 2 << 20
	DefaultMaxRecordBytes = 8 << 20
)

// maxWindows bounds the rate-limit windows kept (the oldest started go first).
const maxWindows = 100_000

// Memory is the in-process store: request states, execution records, the response
// cache and rate-limit counters. It bounds itself: expired entries are swept first,
// then the oldest written are evicted. Records of failed requests have a bound of
// their own. What a caller writes is copied in or, where the contract says the caller
// leaves it alone (a record given to Put, a runs map given to PutRun, accepted steps),
// kept; what a caller reads is copied out, so a caller never changes stored values.
//
// Each kind of entry has a lock of its own, so that a stage call's state write and
// record write, and a records listing, do not wait on each other.
type Memory struct {
	cacheMu    sync.Mutex
	cache      *expiring.Map[CacheEntry]
	requestsMu sync.Mutex
	requests   *expiring.Map[memoryState]
	// records holds the records of requests that did not fail, failed those of failed
	// requests. A request's record moves between them as its status changes, leaving a
	// tombstone behind (see record). recordsMu guards both.
	recordsMu sync.Mutex
	records   *expiring.Map[memoryRecord]
	failed    *expiring.Map[memoryRecord]
	windowsMu sync.Mutex
	windows   *expiring.Map[window]
	// approvals holds each approval slot's approval as JSON (memory_approvals.go).
	approvalsMu sync.Mutex
	approvals   *expiring.Map[storedApproval]
	retention   Retention
	maxState    int64
	maxRecord   int64
	now         func() time.Time
}

type window struct {
	start  time.Time
	length time.Duration
	count  int
}

type memoryState struct {
	revision int64
	st       *engine.RequestState // a copy (sharing accepted steps and runs), or nil when stored as data
	data     []byte
	// steps are the state's accepted steps, of size stepsSize: the next revision
	// sizes only the steps it adds (see stepsSize). size is the whole state's.
	steps           []engine.RoutingStep
	stepsSize, size int64
}

type memoryRecord struct {
	revision int64
	rec      *engine.ExecutionRecord // as Put took it or AppendOperation made it, never changed; nil: a tombstone
	summary  *Summary                // what List matches and shows; never changed once stored
	size     int64                   // recordSize(rec)
	// owned is set when the array of rec.Operations is the store's own (AppendOperation
	// made it), not Put's caller's: the next append may write past its length.
	owned bool
}

// NewMemory returns an empty store.
func NewMemory(opts MemoryOptions) *Memory {
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 10_000
	}
	if opts.Retention.MaxRecords <= 0 {
		opts.Retention.MaxRecords = DefaultMaxRecords
	}
	if opts.MaxFailedRecords <= 0 {
		opts.MaxFailedRecords = opts.Retention.MaxRecords
	}
	opts.MaxBytes = cmp.Or(max(opts.MaxBytes, 0), DefaultMaxBytes)
	return &Memory{
		cache:    expiring.New[CacheEntry](opts.MaxEntries),
		requests: expiring.NewSized[memoryState](opts.MaxEntries, opts.MaxBytes/2),
		records:  expiring.NewSized[memoryRecord](opts.Retention.MaxRecords, opts.MaxBytes/4),
		failed:   expiring.NewSized[memoryRecord](opts.MaxFailedRecords, opts.MaxBytes/4),
		windows:  expiring.New[window](maxWindows), retention: opts.Retention,
		approvals: expiring.New[storedApproval](opts.MaxEntries),
		maxState:  cmp.Or(max(opts.MaxStateBytes, 0), DefaultMaxStateBytes), maxRecord: cmp.Or(max(opts.MaxRecordBytes, 0), DefaultMaxRecordBytes),
		now: time.Now,
	}
}

// GetCache implements Cache.
func (m *Memory) GetCache(ctx context.Context, key string) (CacheEntry, bool, error) {
	if err := ctx.Err(); err != nil {
		return CacheEntry{}, false, err
	}
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
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
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	m.cache.Put(key, e, m.now().Add(ttl))
	return nil
}

// GetRequest implements engine.StateStore.
func (m *Memory) GetRequest(ctx context.Context, id string) (*engine.RequestState, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	now := m.now()
	m.requestsMu.Lock()
	e, ok := m.requests.Get(id, now)
	m.requestsMu.Unlock()
	if !ok {
		return nil, false, nil
	}
	if e.st != nil {
		st, err := engine.CloneState(e.st)
		return st, err == nil, err
	}
	var s engine.RequestState
	if err := json.Unmarshal(e.data, &s); err != nil {
		return nil, false, fmt.Errorf("decode request state: %w", err)
	}
	return &s, true, nil
}

// PutRequest implements engine.StateStore, revision-gated. States are copied
// (engine.CloneState: accepted steps are shared, as they never change), or JSON-encoded
// when they hold values that are not JSON-shaped.
func (m *Memory) PutRequest(ctx context.Context, s *engine.RequestState, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e := memoryState{revision: s.Revision}
	if c, err := engine.CloneState(s); err == nil {
		e.st, e.steps = c, c.PriorSteps
	} else if e.data, err = json.Marshal(s); err != nil {
		return fmt.Errorf("encode request state: %w", err)
	}
	if ttl <= 0 {
		ttl = DefaultRequestTTL
	}
	now := m.now()
	m.requestsMu.Lock()
	defer m.requestsMu.Unlock()
	old, ok := m.requests.Get(s.ID, now)
	if ok && old.revision >= s.Revision {
		return fmt.Errorf("%w: request %q state has revision %d, got %d", engine.ErrStaleRevision, s.ID, old.revision, s.Revision)
	}
	e.stepsSize = stepsSize(s.PriorSteps, old.steps, old.stepsSize)
	size := stateSize(s, e.stepsSize)
	if size > m.maxState {
		return tooLarge("state", s.ID, size, m.maxState)
	}
	e.size = size
	m.requests.PutSized(s.ID, e, size, now.Add(ttl))
	return nil
}

// PutRun implements engine.RunStore: the next revision shares everything but the runs
// map with the stored one (neither is ever changed) and is sized by the run's change.
func (m *Memory) PutRun(ctx context.Context, id string, revision int64, step string, runs map[string]*engine.StepRun, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ttl <= 0 {
		ttl = DefaultRequestTTL
	}
	now := m.now()
	m.requestsMu.Lock()
	defer m.requestsMu.Unlock()
	old, ok := m.requests.Get(id, now)
	if !ok || old.st == nil || old.revision != revision-1 {
		return fmt.Errorf("%w: request %q state is not at revision %d", engine.ErrStaleRevision, id, revision-1)
	}
	st := *old.st
	st.Runs, st.Revision = runs, revision
	size := old.size - runSize(step, old.st.Runs[step]) + runSize(step, runs[step])
	if size > m.maxState {
		return tooLarge("state", id, size, m.maxState)
	}
	e := old
	e.revision, e.st, e.size = revision, &st, size
	m.requests.PutSized(id, e, size, now.Add(ttl))
	return nil
}

// Put implements engine.RecordStore: rec is kept as it is (Get copies).
func (m *Memory) Put(ctx context.Context, rec *engine.ExecutionRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	size := recordSize(rec)
	if size > m.maxRecord {
		return tooLarge("record", rec.RequestID, size, m.maxRecord)
	}
	e := memoryRecord{revision: rec.Revision, rec: rec, summary: Summarize(rec), size: size}
	now := m.now()
	var expires time.Time
	if ttl := m.retention.TTL(rec.Status); ttl > 0 {
		expires = now.Add(ttl)
	}
	m.recordsMu.Lock()
	defer m.recordsMu.Unlock()
	if old, ok := m.record(rec.RequestID, now); ok && old.revision >= rec.Revision {
		return fmt.Errorf("%w: request %q has revision %d, got %d", engine.ErrStaleRevision, rec.RequestID, old.revision, rec.Revision)
	}
	into, other := m.records, m.failed
	if rec.Status == engine.RecordFailed {
		into, other = m.failed, m.records
	}
	into.PutSized(rec.RequestID, e, size, expires)
	if _, ok := other.Get(rec.RequestID, now); ok {
		other.Put(rec.RequestID, memoryRecord{revision: rec.Revision}, expires)
	}
	return nil
}

// AppendOperation implements engine.OperationStore: the next revision shares all but
// its operations with the stored one, and its summary and size are the stored one's
// with op added, so an append costs the same however large the record. The operations
// go into an array the store owns, which later appends write past the length of in
// place: only the first append after a Put (whose caller's array is never written)
// copies the earlier operations, and growth copies them now and then (amortized).
// Readers are unaffected: Get copies the operations up to its revision's length.
func (m *Memory) AppendOperation(ctx context.Context, requestID string, op engine.OperationRecord, at time.Time, maxEntries int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := m.now()
	m.recordsMu.Lock()
	defer m.recordsMu.Unlock()
	old, ok := m.record(requestID, now)
	if !ok || old.tombstone() {
		return engine.RecordNotFound(requestID)
	}
	if n := engine.RecordEntries(old.rec) + 1; n > maxEntries {
		return fmt.Errorf("%w: the execution record of request %q would hold %d entries, over the limit of %d", engine.ErrTooLarge, requestID, n, maxEntries)
	}
	size := old.size + operationSize(&op)
	if size > m.maxRecord {
		return tooLarge("record", requestID, size, m.maxRecord)
	}
	rec := *old.rec
	ops := rec.Operations
	if !old.owned {
		ops = slices.Clip(ops) // the append makes an array of the store's own
	}
	rec.Operations = append(ops, op)
	rec.Revision, rec.UpdatedAt = old.revision+1, at
	var expires time.Time
	if ttl := m.retention.TTL(rec.Status); ttl > 0 {
		expires = now.Add(ttl)
	}
	into := m.records
	if rec.Status == engine.RecordFailed {
		into = m.failed
	}
	into.PutSized(requestID, memoryRecord{revision: rec.Revision, rec: &rec, summary: old.summary.withOperation(&op, rec.Revision, at), size: size, owned: true}, size, expires)
	return nil
}

// tooLarge is the error of a write of request id's state or record over its limit.
func tooLarge(what, id string, size, limit int64) error {
	return fmt.Errorf("%w: request %q %s holds about %d bytes, over the limit of %d", engine.ErrTooLarge, id, what, size, limit)
}

// record returns the entry of id: of its entries among the records and the failed
// ones, the one of the higher revision, a record before a tombstone. The caller holds
// m.recordsMu.
func (m *Memory) record(id string, now time.Time) (memoryRecord, bool) {
	r, rok := m.records.Get(id, now)
	f, fok := m.failed.Get(id, now)
	if !fok || rok && (r.revision > f.revision || r.revision == f.revision && f.tombstone()) {
		return r, rok
	}
	return f, true
}

func (e memoryRecord) tombstone() bool { return e.rec == nil }

// Get implements engine.RecordStore.
func (m *Memory) Get(ctx context.Context, requestID string) (*engine.ExecutionRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := m.now()
	m.recordsMu.Lock()
	e, ok := m.record(requestID, now)
	m.recordsMu.Unlock()
	if !ok || e.tombstone() {
		return nil, engine.RecordNotFound(requestID)
	}
	return engine.CopyRecord(e.rec), nil
}

// Allow implements Limiter with fixed windows aligned to the first event. At most
// maxWindows windows are kept: past that the oldest started go first, so keys never
// grow the store without bound.
func (m *Memory) Allow(ctx context.Context, key string, limit int, length time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := m.now()
	m.windowsMu.Lock()
	defer m.windowsMu.Unlock()
	w, ok := m.windows.Get(key, now)
	if !ok {
		w = window{start: now, length: length}
	}
	w.count++
	m.windows.Put(key, w, w.start.Add(w.length))
	return w.count <= limit, nil
}

var (
	_ engine.StateStore     = (*Memory)(nil)
	_ engine.RunStore       = (*Memory)(nil)
	_ engine.RecordStore    = (*Memory)(nil)
	_ engine.OperationStore = (*Memory)(nil)
	_ RecordLister          = (*Memory)(nil)
	_ Cache                 = (*Memory)(nil)
	_ Limiter               = (*Memory)(nil)
)
