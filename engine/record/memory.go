// Package record holds execution record stores. Memory is the in-process default; every
// store passes the same conformance suite (recordtest).
package record

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/expiring"
)

// Retention says how long records are kept, by outcome, and how many at most; zero
// durations keep them until evicted. A running record is kept for the error retention.
type Retention struct {
	Success time.Duration
	Error   time.Duration
	// MaxRecords bounds the records an in-process store holds, the oldest written
	// going first; 0 means DefaultMaxRecords.
	MaxRecords int
}

// DefaultMaxRecords bounds Memory when Retention.MaxRecords is 0.
const DefaultMaxRecords = 10_000

func (r Retention) ttl(status engine.RecordStatus) time.Duration {
	if status == engine.RecordSucceeded {
		return r.Success
	}
	return r.Error
}

// Memory is an in-process engine.RecordStore. Records are deep-copied in and out
// (engine.CloneRecord; JSON-encoded when they hold values that are not JSON-shaped), so
// a caller can never alias stored state, exactly as with a remote store. It holds at
// most Retention.MaxRecords records.
type Memory struct {
	mu        sync.Mutex
	records   *expiring.Map[memoryEntry]
	retention Retention
	now       func() time.Time
}

type memoryEntry struct {
	revision int64
	rec      *engine.ExecutionRecord // a private copy, or nil when stored as data
	data     []byte
}

// NewMemory returns an empty store with the given retention.
func NewMemory(retention Retention) *Memory {
	if retention.MaxRecords <= 0 {
		retention.MaxRecords = DefaultMaxRecords
	}
	return &Memory{records: expiring.New[memoryEntry](retention.MaxRecords), retention: retention, now: time.Now}
}

// Put implements engine.RecordStore.
func (m *Memory) Put(ctx context.Context, rec *engine.ExecutionRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e := memoryEntry{revision: rec.Revision}
	if c, err := engine.CloneRecord(rec); err == nil {
		e.rec = c
	} else if e.data, err = json.Marshal(rec); err != nil {
		return fmt.Errorf("encode execution record: %w", err)
	}
	now := m.now()
	var expires time.Time
	if ttl := m.retention.ttl(rec.Status); ttl > 0 {
		expires = now.Add(ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.records.Get(rec.RequestID, now); ok && old.revision >= rec.Revision {
		return fmt.Errorf("%w: request %q has revision %d, got %d", engine.ErrStaleRevision, rec.RequestID, old.revision, rec.Revision)
	}
	m.records.Put(rec.RequestID, e, expires)
	return nil
}

// Get implements engine.RecordStore.
func (m *Memory) Get(ctx context.Context, requestID string) (*engine.ExecutionRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	e, ok := m.records.Get(requestID, m.now())
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", engine.ErrRecordNotFound, requestID)
	}
	if e.rec != nil {
		return engine.CloneRecord(e.rec)
	}
	var rec engine.ExecutionRecord
	if err := json.Unmarshal(e.data, &rec); err != nil {
		return nil, fmt.Errorf("decode execution record: %w", err)
	}
	return &rec, nil
}

var _ engine.RecordStore = (*Memory)(nil)
