package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// RecordStatus is the state of a request's execution record.
type RecordStatus string

// Record statuses.
const (
	RecordRunning   RecordStatus = "running"
	RecordSucceeded RecordStatus = "succeeded"
	RecordFailed    RecordStatus = "failed"
)

// Final response sources.
const (
	SourceAfterSynthesis = "after_synthesis_hooks"
	SourceShortCircuit   = "before_planning_short_circuit"
)

// PhaseRecord is one accepted plan phase and the results of its steps.
type PhaseRecord struct {
	Phase   int          `json:"phase"`
	Plan    *RoutingPlan `json:"plan"`
	Results []StepResult `json:"results,omitempty"`
}

// ExecutionRecord is the stored evidence of one request: every hook invocation in
// order, the accepted plan of each phase with its results, the final response and its
// source. Revision grows with every rewrite; stores never let a lower or equal revision
// replace a stored record.
type ExecutionRecord struct {
	RequestID           string           `json:"request_id"`
	Generation          string           `json:"generation,omitempty"`
	Status              RecordStatus     `json:"status"`
	Error               string           `json:"error,omitempty"`
	PipelineHooks       []Invocation     `json:"pipeline_hooks"`
	Phases              []PhaseRecord    `json:"phases,omitempty"`
	Result              *ExecutionResult `json:"result,omitempty"`
	FinalResponse       string           `json:"final_response,omitempty"`
	FinalResponseSource string           `json:"final_response_source,omitempty"`
	Revision            int64            `json:"revision"`
	CreatedAt           time.Time        `json:"created_at"`
	UpdatedAt           time.Time        `json:"updated_at"`
}

// Store errors.
var (
	ErrRecordNotFound = errors.New("execution record not found")
	ErrStaleRevision  = errors.New("stale execution record revision")
)

// RecordStore persists execution records. Implementations must be safe for concurrent
// use and must store a copy: the caller may reuse rec after Put returns.
type RecordStore interface {
	// Put stores rec unless the stored record for rec.RequestID has a revision greater
	// than or equal to rec.Revision, in which case it returns ErrStaleRevision and
	// changes nothing. The check and the write are one atomic step.
	Put(ctx context.Context, rec *ExecutionRecord) error
	// Get returns the stored record or ErrRecordNotFound.
	Get(ctx context.Context, requestID string) (*ExecutionRecord, error)
}

// RecordWriter keeps the evolving record of one request and writes a new revision of
// it on every Save, with the invocations of its Trail. Late effect updates on the trail
// save a new revision too. It is safe for concurrent use.
type RecordWriter struct {
	mu    sync.Mutex
	store RecordStore
	trail *Trail
	rec   ExecutionRecord
}

// NewRecordWriter starts the record of a request; trail must not be nil.
func NewRecordWriter(store RecordStore, trail *Trail, requestID, generation string) *RecordWriter {
	now := time.Now().UTC()
	w := &RecordWriter{store: store, trail: trail, rec: ExecutionRecord{
		RequestID: requestID, Generation: generation, Status: RecordRunning,
		CreatedAt: now, UpdatedAt: now,
	}}
	trail.OnLateEffect(func() { _ = w.Save(context.WithoutCancel(context.Background())) })
	return w
}

// Update applies fn to the record under the writer's lock. fn must not retain rec.
func (w *RecordWriter) Update(fn func(rec *ExecutionRecord)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn(&w.rec)
}

// Snapshot returns a copy of the current record with the trail's invocations.
func (w *RecordWriter) Snapshot() *ExecutionRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.snapshotLocked()
}

func (w *RecordWriter) snapshotLocked() *ExecutionRecord {
	rec := w.rec
	rec.PipelineHooks = w.trail.Invocations()
	if rec.PipelineHooks == nil {
		rec.PipelineHooks = []Invocation{}
	}
	rec.Phases = append([]PhaseRecord(nil), w.rec.Phases...)
	return &rec
}

// Save writes the next revision. A nil store makes it a no-op. ErrStaleRevision from
// the store means a newer revision already landed and is not returned as an error.
func (w *RecordWriter) Save(ctx context.Context) error {
	if w.store == nil {
		return nil
	}
	w.mu.Lock()
	w.rec.Revision++
	w.rec.UpdatedAt = time.Now().UTC()
	snap := w.snapshotLocked()
	w.mu.Unlock()
	if err := w.store.Put(ctx, snap); err != nil && !errors.Is(err, ErrStaleRevision) {
		return err
	}
	return nil
}

// CloneRecord returns a deep copy of rec sharing no mutable memory with it. Values a
// plan or result holds that are not JSON-shaped fail with a *CloneError.
func CloneRecord(rec *ExecutionRecord) (*ExecutionRecord, error) {
	out := *rec
	out.PipelineHooks = make([]Invocation, len(rec.PipelineHooks))
	for i, inv := range rec.PipelineHooks {
		out.PipelineHooks[i] = copyInvocation(inv)
	}
	if rec.Phases != nil {
		out.Phases = make([]PhaseRecord, len(rec.Phases))
		for i, ph := range rec.Phases {
			plan, err := ClonePlan(ph.Plan)
			if err != nil {
				return nil, err
			}
			results, err := cloneResults(ph.Results)
			if err != nil {
				return nil, err
			}
			out.Phases[i] = PhaseRecord{Phase: ph.Phase, Plan: plan, Results: results}
		}
	}
	if rec.Result != nil {
		r := *rec.Result
		steps, err := cloneResults(r.Steps)
		if err != nil {
			return nil, err
		}
		r.Steps = steps
		out.Result = &r
	}
	return &out, nil
}

func cloneResults(in []StepResult) ([]StepResult, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]StepResult, len(in))
	for i, r := range in {
		params, err := CloneValue(r.Parameters)
		if err != nil {
			return nil, err
		}
		if r.Parameters != nil {
			r.Parameters = params.(map[string]any)
		}
		if r.Response, err = CloneValue(r.Response); err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}
