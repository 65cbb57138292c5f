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
)

// Retention says how long records are kept, by outcome; zero keeps them until the
// process ends. A running record is kept for the error retention.
type Retention struct {
	Success time.Duration
	Error   time.Duration
}

func (r Retention) ttl(status engine.RecordStatus) time.Duration {
	if status == engine.RecordSucceeded {
		return r.Success
	}
	return r.Error
}

// Memory is an in-process engine.RecordStore. Records are deep-copied in and out
// (engine.CloneRecord; JSON-encoded when they hold values that are not JSON-shaped), so
// a caller can never alias stored state, exactly as with a remote store.
type Memory struct {
	mu        sync.Mutex
	records   map[string]memoryEntry
	retention Retention
	now       func() time.Time
}

type memoryEntry struct {
	revision int64
	rec      *engine.ExecutionRecord // a private copy, or nil when stored as data
	data     []byte
	expires  time.Time
}

// NewMemory returns an empty store with the given retention.
func NewMemory(retention Retention) *Memory {
	return &Memory{records: make(map[string]memoryEntry), retention: retention, now: time.Now}
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
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.live(rec.RequestID, now); ok && old.revision >= rec.Revision {
		return fmt.Errorf("%w: request %q has revision %d, got %d", engine.ErrStaleRevision, rec.RequestID, old.revision, rec.Revision)
	}
	if ttl := m.retention.ttl(rec.Status); ttl > 0 {
		e.expires = now.Add(ttl)
	}
	m.records[rec.RequestID] = e
	m.sweep(now)
	return nil
}

// Get implements engine.RecordStore.
func (m *Memory) Get(ctx context.Context, requestID string) (*engine.ExecutionRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	e, ok := m.live(requestID, m.now())
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

func (m *Memory) live(id string, now time.Time) (memoryEntry, bool) {
	e, ok := m.records[id]
	if !ok || (!e.expires.IsZero() && !now.Before(e.expires)) {
		return memoryEntry{}, false
	}
	return e, true
}

// sweep drops a bounded number of expired records per write, so memory stays bounded
// without a background goroutine.
func (m *Memory) sweep(now time.Time) {
	n := 0
	for id, e := range m.records {
		if n++; n > 16 {
			return
		}
		if !e.expires.IsZero() && !now.Before(e.expires) {
			delete(m.records, id)
		}
	}
}

var _ engine.RecordStore = (*Memory)(nil)
