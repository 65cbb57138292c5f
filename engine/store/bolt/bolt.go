// Package bolt keeps agentd's state in one file on local disk (go.etcd.io/bbolt):
// request states, execution records, response-cache entries and rate-limit windows, so
// that they survive a restart of the daemon, a crash or a SIGKILL. Store implements
// engine.StateStore, engine.RecordStore, store.RecordLister, store.Cache and
// store.Limiter, and passes the conformance suites the memory and Redis stores pass
// (storetest).
//
// Durability: every write is committed with an fsync before it returns, so a write
// that returned nil is on disk. Writes are group-committed: one goroutine commits the
// writes waiting when it is free in one transaction and one fsync, so a lone write
// waits for its own fsync only and concurrent writes share one. A write's context is
// checked before it is queued, not while it waits: once queued, its outcome is the
// commit's.
//
// Bounds: as the memory store's (store.MemoryOptions), with sizes that are the bytes
// each entry takes in the file. An index in memory holds each entry's place in write
// order, its expiry and, for records, the summary lists match; writes that go past a
// bound evict the oldest written, and a background sweep deletes expired entries a
// bounded number at a time. Reads check expiry, so an expired entry is never served
// while it waits to be swept. The file grows to the largest it has held and reuses
// its free pages after (bbolt never shrinks a file).
package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/expiring"
	"github.com/agentd-dev/agentd/engine/store"
)

// FileName is the name of the store's file in its directory.
const FileName = "agentd.db"

// DefaultSweepEvery is how often expired entries are swept when Options.SweepEvery is
// 0; sweepLimit bounds the entries of each kind one sweep examines.
const (
	DefaultSweepEvery = time.Minute
	sweepLimit        = 10_000
)

// maxWindows bounds the rate-limit windows kept, as the memory store does.
const maxWindows = 100_000

// maxBatch bounds the writes one commit takes.
const maxBatch = 512

// Options configure a Store. The zero value is valid.
type Options struct {
	// MaxEntries bounds the cache entries and the request states, each; 0 means 10,000.
	MaxEntries int
	// Retention says how long records are kept and how many at most.
	Retention store.Retention
	// MaxFailedRecords bounds the records of failed requests, kept apart from the
	// others so that a flood of new requests cannot evict them before their retention;
	// 0 means Retention.MaxRecords.
	MaxFailedRecords int
	// MaxBytes bounds the bytes the request states and the records take in the file,
	// half each (the oldest written go first), the records' half shared evenly by the
	// records of failed requests and the others; 0 means store.DefaultMaxBytes.
	MaxBytes int64
	// MaxStateBytes and MaxRecordBytes bound the JSON encoding of one request's state
	// and record; a write over the limit fails with engine.ErrTooLarge. 0 means
	// store.DefaultMaxStateBytes and store.DefaultMaxRecordBytes.
	MaxStateBytes, MaxRecordBytes int64
	// SweepEvery is how often expired entries are deleted; 0 means DefaultSweepEvery.
	SweepEvery time.Duration
}

// Buckets of the file, one per kind of entry, each keyed by request id or cache or
// limit key. Every value starts with a header (see header).
var (
	bucketRequests = []byte("requests")
	bucketRecords  = []byte("records")
	bucketCache    = []byte("cache")
	bucketWindows  = []byte("windows")
)

// Store is the durable store in one bbolt file. It is safe for concurrent use; one
// process holds the file at a time (Open fails while another holds it).
//
// A write is decided under the index lock (the revision gate reads the index, which
// knows every live entry's revision), queued in decision order with the value it
// stores, and answered once the commit that holds it has returned. Until then the
// value is pending: reads find it there, so a writer that retries after losing the
// gate sees the write that won without waiting for its commit. A commit that fails
// leaves the index ahead of the file, so the store stops: every later call fails with
// store.ErrUnavailable until the daemon is restarted and loads the file again.
type Store struct {
	db   *bbolt.DB
	path string
	opts Options
	now  func() time.Time

	// mu guards everything below.
	mu       sync.Mutex
	requests *expiring.Map[entry]
	records  *expiring.Map[entry] // the records of requests that did not fail
	failed   *expiring.Map[entry] // the records of failed requests
	cache    *expiring.Map[entry]
	windows  *expiring.Map[entry]
	stamp    uint64 // the last write stamp given
	// next is the batch of writes the next commit takes; pending the values of the
	// writes queued and not yet committed, by bucket and key.
	next    *batch
	pending map[pendingKey]pendingValue
	// broken is the failure of a commit, after which the store refuses every call.
	broken error
	closed bool

	kick chan struct{}
	quit chan struct{}
	wg   sync.WaitGroup
}

// entry is the index's view of one stored value: its write stamp, its revision (for
// a rate-limit window, its count), for a window its end, and for a record its
// summary (never changed once stored).
type entry struct {
	stamp    uint64
	revision int64
	ends     time.Time
	summary  *store.Summary
}

// batch is the writes one commit takes, in the order they were decided; done is
// closed once the commit has returned, err then its failure.
type batch struct {
	writes []write
	done   chan struct{}
	err    error
}

// write is a put of value under key in bucket, or its deletion when value is nil.
type write struct {
	bucket []byte
	key    string
	value  []byte
	stamp  uint64
}

type pendingKey struct {
	bucket string
	key    string
}

type pendingValue struct {
	value []byte
	stamp uint64
}

// Open opens (creating them if need be) the directory dir and the store's file in it,
// loads the index, deletes what has expired or no longer fits the bounds, and starts
// the committer and the sweep. Close stops them.
func Open(dir string, opts Options) (*Store, error) {
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 10_000
	}
	if opts.Retention.MaxRecords <= 0 {
		opts.Retention.MaxRecords = store.DefaultMaxRecords
	}
	if opts.MaxFailedRecords <= 0 {
		opts.MaxFailedRecords = opts.Retention.MaxRecords
	}
	opts.MaxBytes = cmp.Or(max(opts.MaxBytes, 0), store.DefaultMaxBytes)
	opts.MaxStateBytes = cmp.Or(max(opts.MaxStateBytes, 0), store.DefaultMaxStateBytes)
	opts.MaxRecordBytes = cmp.Or(max(opts.MaxRecordBytes, 0), store.DefaultMaxRecordBytes)
	opts.SweepEvery = cmp.Or(max(opts.SweepEvery, 0), DefaultSweepEvery)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout: time.Second,
		// The free list is rebuilt at open rather than written by every commit.
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%s is in use by another process (its lock is held)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &Store{
		db: db, path: path, opts: opts, now: time.Now,
		requests: expiring.NewSized[entry](opts.MaxEntries, opts.MaxBytes/2),
		records:  expiring.NewSized[entry](opts.Retention.MaxRecords, opts.MaxBytes/4),
		failed:   expiring.NewSized[entry](opts.MaxFailedRecords, opts.MaxBytes/4),
		cache:    expiring.New[entry](opts.MaxEntries),
		windows:  expiring.New[entry](maxWindows),
		next:     &batch{done: make(chan struct{})},
		pending:  map[pendingKey]pendingValue{},
		kick:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
	}
	for m, bucket := range s.kinds() {
		m.OnEvict(func(key string, _ entry) { s.queue(bucket, key, nil) })
	}
	if err := s.load(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	s.wg.Add(2)
	go s.commitLoop()
	go s.sweepLoop()
	s.mu.Lock()
	b := s.next
	s.mu.Unlock()
	if len(b.writes) > 0 {
		s.kickCommitter()
		if err := s.wait(b); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// kinds yields each map of the index with the bucket of its entries.
func (s *Store) kinds() func(yield func(*expiring.Map[entry], []byte) bool) {
	return func(yield func(*expiring.Map[entry], []byte) bool) {
		_ = yield(s.requests, bucketRequests) && yield(s.records, bucketRecords) && yield(s.failed, bucketRecords) &&
			yield(s.cache, bucketCache) && yield(s.windows, bucketWindows)
	}
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Close commits the writes queued, stops the sweep and the committer and closes the
// file; calls after Close fail.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.quit)
	s.wg.Wait()
	return s.db.Close()
}

// header starts every stored value: the write stamp (the order of writes, kept
// across restarts), the expiry in Unix nanoseconds (0: none) and the revision (for a
// rate-limit window, its count).
type header struct {
	stamp    uint64
	expires  int64
	revision int64
}

const headerLen = 24

func (h header) append(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, h.stamp)
	b = binary.BigEndian.AppendUint64(b, uint64(h.expires))
	return binary.BigEndian.AppendUint64(b, uint64(h.revision))
}

// parseHeader splits a stored value into its header and payload.
func parseHeader(v []byte) (header, []byte, error) {
	if len(v) < headerLen {
		return header{}, nil, fmt.Errorf("stored value of %d bytes is shorter than its header", len(v))
	}
	return header{
		stamp:    binary.BigEndian.Uint64(v),
		expires:  int64(binary.BigEndian.Uint64(v[8:])),
		revision: int64(binary.BigEndian.Uint64(v[16:])),
	}, v[headerLen:], nil
}

// expiry is the header expiry of t (0 for the zero time) and back.
func expiry(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func expiryTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// usable returns the error every call answers once the store is closed or broken. The
// caller holds s.mu.
func (s *Store) usable() error {
	switch {
	case s.closed:
		return fmt.Errorf("%w: %s is closed", store.ErrUnavailable, s.path)
	case s.broken != nil:
		return fmt.Errorf("%w: a commit to %s failed, restart to load it again: %w", store.ErrUnavailable, s.path, s.broken)
	}
	return nil
}

// put queues a write of payload under key in bucket with header h, stamped with the
// next write stamp, and returns the stamp and the stored value's size. The caller
// holds s.mu.
func (s *Store) put(bucket []byte, key string, h header, payload ...[]byte) (uint64, int64) {
	s.stamp++
	h.stamp = s.stamp
	n := headerLen
	for _, p := range payload {
		n += len(p)
	}
	v := h.append(make([]byte, 0, n))
	for _, p := range payload {
		v = append(v, p...)
	}
	s.queue(bucket, key, v)
	return h.stamp, int64(n)
}

// queue adds a write (nil value: a deletion) to the next batch. The caller holds s.mu.
func (s *Store) queue(bucket []byte, key string, value []byte) {
	s.next.writes = append(s.next.writes, write{bucket: bucket, key: key, value: value, stamp: s.stamp})
	s.pending[pendingKey{string(bucket), key}] = pendingValue{value: value, stamp: s.stamp}
}

// lookup returns the value of key in bucket if the index holds it live in one of ms:
// the pending value or else the committed one; nil when there is none. The value is
// not to be changed.
func (s *Store) lookup(ctx context.Context, bucket []byte, key string, ms ...*expiring.Map[entry]) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	live, now := false, s.now()
	for _, m := range ms {
		_, ok := m.Get(key, now)
		live = live || ok
	}
	p, pending := s.pending[pendingKey{string(bucket), key}]
	s.mu.Unlock()
	switch {
	case !live:
		return nil, nil
	case pending:
		return p.value, nil
	}
	// Not pending: the last write of key is committed, and the file holds it or a
	// later one.
	var v []byte
	err := s.db.View(func(tx *bbolt.Tx) error {
		v = bytes.Clone(tx.Bucket(bucket).Get([]byte(key)))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", store.ErrUnavailable, s.path, err)
	}
	return v, nil
}

// wait kicks the committer and waits for the commit of batch b, which the caller's
// writes went into (under s.mu, which the caller has released since).
func (s *Store) wait(b *batch) error {
	s.kickCommitter()
	<-b.done
	return b.err
}

func (s *Store) kickCommitter() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// load fills the index from the file, each kind in write order, and queues the
// deletion of what has expired or was written past a bound.
func (s *Store) load() error {
	type loaded struct {
		key     string
		h       header
		size    int64
		summary *store.Summary
	}
	now := s.now()
	kinds := map[string][]loaded{}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketRequests, bucketRecords, bucketCache, bucketWindows} {
			b, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			err = b.ForEach(func(k, v []byte) error {
				h, payload, err := parseHeader(v)
				if err != nil {
					return fmt.Errorf("%s %q: %w", name, k, err)
				}
				s.stamp = max(s.stamp, h.stamp)
				if h.expires != 0 && now.UnixNano() >= h.expires {
					s.queue(name, string(k), nil)
					return nil
				}
				l := loaded{key: string(k), h: h, size: int64(len(v))}
				if string(name) == string(bucketRecords) {
					data, _, err := splitRecord(payload)
					if err == nil {
						l.summary = new(store.Summary)
						err = json.Unmarshal(data, l.summary)
					}
					if err != nil {
						return fmt.Errorf("record %q: %w", k, err)
					}
				}
				kinds[string(name)] = append(kinds[string(name)], l)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for name, ls := range kinds {
		slices.SortFunc(ls, func(a, b loaded) int { return cmp.Compare(a.h.stamp, b.h.stamp) })
		for _, l := range ls {
			e := entry{stamp: l.h.stamp, revision: l.h.revision, summary: l.summary}
			m := s.index([]byte(name), l.summary)
			if m == s.windows {
				e.ends = expiryTime(l.h.expires)
			}
			m.PutSized(l.key, e, l.size, expiryTime(l.h.expires))
		}
	}
	return nil
}

// index is the map of entries of bucket (for a record, the one of its summary's
// status).
func (s *Store) index(bucket []byte, sum *store.Summary) *expiring.Map[entry] {
	switch string(bucket) {
	case string(bucketRequests):
		return s.requests
	case string(bucketCache):
		return s.cache
	case string(bucketWindows):
		return s.windows
	}
	if sum.Status == engine.RecordFailed {
		return s.failed
	}
	return s.records
}

// commitLoop is the committer: whenever kicked, it commits the batch queued so far,
// until Close, when it commits what is left.
func (s *Store) commitLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.kick:
			s.commit()
		case <-s.quit:
			s.commit()
			return
		}
	}
}

// commit writes the next batch in one transaction, ending with an fsync, and answers
// its writers. A failed commit breaks the store.
func (s *Store) commit() {
	s.mu.Lock()
	b := s.next
	if len(b.writes) == 0 {
		s.mu.Unlock()
		return
	}
	s.next = &batch{done: make(chan struct{})}
	s.mu.Unlock()
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for _, w := range b.writes {
			bucket := tx.Bucket(w.bucket)
			var err error
			if w.value == nil {
				err = bucket.Delete([]byte(w.key))
			} else {
				err = bucket.Put([]byte(w.key), w.value)
			}
			if err != nil {
				return fmt.Errorf("%s %q: %w", w.bucket, w.key, err)
			}
		}
		return nil
	})
	s.mu.Lock()
	if err != nil {
		b.err = fmt.Errorf("%w: commit to %s: %w", store.ErrUnavailable, s.path, err)
		s.broken = err
	}
	for _, w := range b.writes {
		k := pendingKey{string(w.bucket), w.key}
		if p, ok := s.pending[k]; ok && p.stamp == w.stamp {
			delete(s.pending, k)
		}
	}
	s.mu.Unlock()
	close(b.done)
}

// sweepLoop deletes expired entries every SweepEvery, at most sweepLimit examined of
// each kind.
func (s *Store) sweepLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.quit:
			return
		}
		if s.sweep(s.now()) > 0 {
			s.kickCommitter()
		}
	}
}

// sweep removes from the index the expired entries of each kind it examines and
// queues their deletion; it returns how many it removed.
func (s *Store) sweep(now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for m, bucket := range s.kinds() {
		m.Sweep(now, sweepLimit, func(key string, _ entry) {
			s.queue(bucket, key, nil)
			n++
		})
	}
	return n
}

// tooLarge is the error of a write of request id's state or record over its limit.
func tooLarge(what, id string, size int, limit int64) error {
	return fmt.Errorf("%w: request %q %s is %d bytes, over the limit of %d", engine.ErrTooLarge, id, what, size, limit)
}
