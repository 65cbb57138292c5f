package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// A state's payload is its runs apart from the rest:
//
//	length of the runs (4 bytes, big-endian) | JSON of the runs | JSON of the rest
//
// The rest is the JSON of the state without its runs (every other field of
// engine.RequestState, whatever fields it gains). A claim (PutRun) changes a state's
// runs alone: it writes them as a value of their own (kindRuns, the JSON of the runs),
// which replaces the runs, the revision and the expiry of the state's value until the
// state is written whole again (PutRequest). A payload written before the split is
// the JSON of the whole state (its first byte is '{', which no length under
// MaxStateBytes begins with); Open rewrites it split.

// GetRequest implements engine.StateStore.
func (s *Store) GetRequest(ctx context.Context, id string) (*engine.RequestState, bool, error) {
	e, vals, ok, err := s.read(ctx, id, s.requests)
	if err != nil || !ok {
		return nil, false, err
	}
	st, err := decodeState(vals)
	if err != nil {
		return nil, false, fmt.Errorf("decode request state %q: %w", id, err)
	}
	st.Revision = e.revision // the rest holds the revision it was written with
	return st, true, nil
}

// decodeState decodes a state from its value and its runs' value (nil for none).
func decodeState(vals [2][]byte) (*engine.RequestState, error) {
	v, err := decodeValue(vals[0])
	if err != nil {
		return nil, err
	}
	runs, rest, err := split(v.payload)
	if err != nil {
		return nil, err
	}
	if vals[1] != nil {
		if v, err = decodeValue(vals[1]); err != nil {
			return nil, err
		}
		runs = v.payload
	}
	return store.DecodeState(rest, runs)
}

// writtenWhole reports whether a state's payload is the JSON of the whole state, as written
// before the split.
func writtenWhole(payload []byte) bool { return len(payload) > 0 && payload[0] == '{' }

// splitWhole returns v, a state's value written whole, with its payload split.
func splitWhole(v value) ([]byte, error) {
	st, err := store.DecodeState(v.payload, nil)
	if err != nil {
		return nil, err
	}
	d := newDraft(kindState, v.key, len(v.payload)+4)
	if _, err := d.appendState(st); err != nil {
		return nil, err
	}
	return d.seal(v.expires, v.revision), nil
}

// PutRequest implements engine.StateStore, revision-gated; ttl 0 means
// store.DefaultRequestTTL. It returns once the state is in the file (under Defer,
// once it is decided).
func (s *Store) PutRequest(ctx context.Context, st *engine.RequestState, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := newDraft(kindState, st.ID, room(&s.stateSize))
	rest, err := d.appendState(st)
	if err != nil {
		return err
	}
	if size := len(d.payload()); int64(size) > s.opts.MaxStateBytes {
		return tooLarge("state", st.ID, size, s.opts.MaxStateBytes)
	}
	s.stateSize.Store(int64(len(d.payload())))
	if err := checkKey(st.ID); err != nil {
		return err
	}
	if ttl <= 0 {
		ttl = store.DefaultRequestTTL
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	now := s.now()
	if old, ok := s.requests.Get(st.ID, now); ok && old.revision >= st.Revision {
		s.mu.Unlock()
		return fmt.Errorf("%w: request %q state has revision %d, got %d", engine.ErrStaleRevision, st.ID, old.revision, st.Revision)
	}
	expires := now.Add(ttl)
	stamp, size := s.put(s.requests, st.ID, d.seal(expiry(expires), st.Revision))
	s.requests.PutSized(st.ID, entry{stamp: stamp, revision: st.Revision, rest: rest}, size, expires)
	b := s.next
	s.mu.Unlock()
	return s.settle(ctx, b)
}

// PutRun implements engine.RunStore: runs are written as a value of their own, which
// replaces the runs, the revision and the expiry of the stored state; the rest of the
// state is neither read nor written again. It returns once the runs are in the file
// (under Defer, once they are decided).
func (s *Store) PutRun(ctx context.Context, id string, revision int64, step string, runs map[string]*engine.StepRun, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := newDraft(kindRuns, id, 64*len(runs))
	var err error
	if d.b, err = store.AppendRuns(d.b, runs); err != nil {
		return err
	}
	if ttl <= 0 {
		ttl = store.DefaultRequestTTL
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	now := s.now()
	e, ok := s.requests.Get(id, now)
	if !ok || e.revision != revision-1 {
		s.mu.Unlock()
		return fmt.Errorf("%w: request %q state is not at revision %d", engine.ErrStaleRevision, id, revision-1)
	}
	if size := 4 + len(d.payload()) + int(e.rest); int64(size) > s.opts.MaxStateBytes {
		s.mu.Unlock()
		return tooLarge("state", id, size, s.opts.MaxStateBytes)
	}
	if e.runs != 0 {
		s.queue(e.runs, nil)
	}
	expires := now.Add(ttl)
	v := d.seal(expiry(expires), revision)
	e.runs, e.revision = s.add(v), revision
	s.requests.PutSized(id, e, e.rest+int64(len(v)), expires)
	b := s.next
	s.mu.Unlock()
	return s.settle(ctx, b)
}

// Put implements engine.RecordStore, revision-gated. The record is kept for its
// outcome's retention. It returns once the record is in the file (under Defer, once it
// is decided).
func (s *Store) Put(ctx context.Context, rec *engine.ExecutionRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sum := store.Summarize(rec)
	d := newDraft(kindRecord, rec.RequestID, room(&s.recordSize))
	err := d.appendPart(func(b []byte) ([]byte, error) { return store.AppendSummary(b, sum) })
	at := len(d.b)
	if err == nil {
		d.b, err = store.AppendRecord(d.b, rec)
	}
	if err != nil {
		return err
	}
	if n := len(d.b) - at; int64(n) > s.opts.MaxRecordBytes {
		return tooLarge("record", rec.RequestID, n, s.opts.MaxRecordBytes)
	}
	if err := checkKey(rec.RequestID); err != nil {
		return err
	}
	s.recordSize.Store(int64(len(d.payload())))
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	now := s.now()
	if old, ok := s.record(rec.RequestID, now); ok && old.revision >= rec.Revision {
		s.mu.Unlock()
		return fmt.Errorf("%w: request %q has revision %d, got %d", engine.ErrStaleRevision, rec.RequestID, old.revision, rec.Revision)
	}
	var expires time.Time
	if ttl := s.opts.Retention.TTL(rec.Status); ttl > 0 {
		expires = now.Add(ttl)
	}
	into, other := s.records, s.failed
	if rec.Status == engine.RecordFailed {
		into, other = s.failed, s.records
	}
	if old, ok := other.Peek(rec.RequestID); ok {
		other.Delete(rec.RequestID)
		s.queue(old.stamp, nil)
	}
	stamp, size := s.put(into, rec.RequestID, d.seal(expiry(expires), rec.Revision))
	into.PutSized(rec.RequestID, entry{stamp: stamp, revision: rec.Revision, summary: sum}, size, expires)
	s.remember(rec, stamp)
	b := s.next
	s.mu.Unlock()
	return s.settle(ctx, b)
}

// recentRecords is how many of the records written last the store keeps as they were
// given to Put, so that the rewrite of a record (every stage call and check of an open
// request reads its record, changes it and writes it) does not decode it from the file.
const recentRecords = 1024

// recentRecord is a record as written under stamp.
type recentRecord struct {
	stamp uint64
	rec   *engine.ExecutionRecord
}

// remember keeps rec, written under stamp, among the recent records (the caller leaves
// a record given to Put alone: engine.RecordStore), forgetting the one written
// recentRecords writes before unless it has been written again since. The caller holds
// s.mu.
func (s *Store) remember(rec *engine.ExecutionRecord, stamp uint64) {
	if len(s.recentOrder) == recentRecords {
		old := s.recentOrder[s.recentNext]
		if r, ok := s.recent[old.id]; ok && r.stamp == old.stamp {
			delete(s.recent, old.id)
		}
		s.recentOrder[s.recentNext] = recentKey{rec.RequestID, stamp}
		s.recentNext = (s.recentNext + 1) % recentRecords
	} else {
		s.recentOrder = append(s.recentOrder, recentKey{rec.RequestID, stamp})
	}
	s.recent[rec.RequestID] = recentRecord{stamp: stamp, rec: rec}
}

// recentKey is a record's place in the order of the recent records.
type recentKey struct {
	id    string
	stamp uint64
}

// record returns the index entry of the record of id, in whichever map holds it. The
// caller holds s.mu.
func (s *Store) record(id string, now time.Time) (entry, bool) {
	if e, ok := s.records.Get(id, now); ok {
		return e, true
	}
	return s.failed.Get(id, now)
}

// split splits a payload of two parts, the first preceded by its length (4 bytes,
// big-endian): a record's (the JSON of its summary, then of the record) or a state's
// (the JSON of its runs, then of the rest).
func split(payload []byte) (first, second []byte, err error) {
	if len(payload) < 4 || uint64(binary.BigEndian.Uint32(payload)) > uint64(len(payload)-4) {
		return nil, nil, fmt.Errorf("malformed payload of %d bytes", len(payload))
	}
	n := 4 + int(binary.BigEndian.Uint32(payload))
	return payload[4:n], payload[n:], nil
}

// Get implements engine.RecordStore.
func (s *Store) Get(ctx context.Context, requestID string) (*engine.ExecutionRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	e, live := s.record(requestID, s.now())
	recent, ok := s.recent[requestID]
	s.mu.Unlock()
	if live && ok && recent.stamp == e.stamp {
		return engine.CopyRecord(recent.rec), nil
	}
	v, ok, err := s.lookup(ctx, requestID, s.records, s.failed)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, engine.RecordNotFound(requestID)
	}
	_, data, err := split(v.payload)
	var rec engine.ExecutionRecord
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil {
		return nil, fmt.Errorf("decode execution record %q: %w", requestID, err)
	}
	return &rec, nil
}

// List implements store.RecordLister over the summaries the index holds: like the
// memory store's, it examines every live record, so a page holds Limit records
// whenever that many more match, and NextCursor is set only when more do.
func (s *Store) List(ctx context.Context, q store.Query) (store.Page, error) {
	if err := ctx.Err(); err != nil {
		return store.Page{}, err
	}
	if err := q.Validate(); err != nil {
		return store.Page{}, err
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return store.Page{}, err
	}
	now := s.now()
	all := make([]*store.Summary, 0, s.records.Len()+s.failed.Len())
	collect := func(_ string, e entry) bool {
		all = append(all, e.summary)
		return true
	}
	s.records.Range(now, collect)
	s.failed.Range(now, collect)
	s.mu.Unlock()
	return store.PageOf(&q, now, all), nil
}

// GetCache implements store.Cache.
func (s *Store) GetCache(ctx context.Context, key string) (store.CacheEntry, bool, error) {
	v, ok, err := s.lookup(ctx, key, s.cache)
	if err != nil || !ok {
		return store.CacheEntry{}, false, err
	}
	var e store.CacheEntry
	if err := json.Unmarshal(v.payload, &e); err != nil {
		return store.CacheEntry{}, false, fmt.Errorf("decode cache entry: %w", err)
	}
	return e, true, nil
}

// PutCache implements store.Cache; ttl 0 means store.DefaultCacheTTL. It returns once
// the entry is on disk.
func (s *Store) PutCache(ctx context.Context, key string, e store.CacheEntry, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.CachedAgainst = maps.Clone(e.CachedAgainst)
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode cache entry: %w", err)
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if ttl <= 0 {
		ttl = store.DefaultCacheTTL
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	expires := s.now().Add(ttl)
	stamp, _ := s.put(s.cache, key, encodeValue(value{kind: kindCache, key: key, expires: expiry(expires)}, data))
	s.cache.Put(key, entry{stamp: stamp}, expires)
	b := s.next
	s.mu.Unlock()
	return s.settle(ctx, b)
}

// Allow implements store.Limiter with fixed windows aligned to the first event; a
// window's count is stored with it, so a restart keeps counting in it. At most
// maxWindows windows are kept, the oldest started going first. It returns once the
// event is counted on disk.
func (s *Store) Allow(ctx context.Context, key string, limit int, length time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkKey(key); err != nil {
		return false, err
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return false, err
	}
	now := s.now()
	w, ok := s.windows.Get(key, now)
	if !ok {
		w = entry{ends: now.Add(length)}
	}
	w.revision++
	w.stamp, _ = s.put(s.windows, key, encodeValue(value{kind: kindWindow, key: key, expires: expiry(w.ends), revision: w.revision}))
	s.windows.Put(key, w, w.ends)
	b := s.next
	s.mu.Unlock()
	if err := s.wait(b); err != nil {
		return false, err
	}
	return w.revision <= int64(limit), nil
}

// checkKey refuses a key longer than bbolt stores.
func checkKey(key string) error {
	if len(key) == 0 || len(key) > bbolt.MaxKeySize {
		return fmt.Errorf("key of %d bytes: the data store keeps keys of 1 to %d bytes", len(key), bbolt.MaxKeySize)
	}
	return nil
}

var (
	_ engine.StateStore     = (*Store)(nil)
	_ engine.RunStore       = (*Store)(nil)
	_ engine.DeferringStore = (*Store)(nil)
	_ engine.RecordStore    = (*Store)(nil)
	_ store.RecordLister    = (*Store)(nil)
	_ store.Cache           = (*Store)(nil)
	_ store.Limiter         = (*Store)(nil)
)
