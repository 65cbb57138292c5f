// Package bolt keeps agentd's state on local disk, in a bbolt file (go.etcd.io/bbolt)
// and its journal: request states, execution records, response-cache entries and
// rate-limit windows, so that they survive a restart of the daemon, a crash or a
// SIGKILL. Store implements
// engine.StateStore, engine.RunStore (a step's claim writes the runs of a state alone,
// beside the state), engine.DeferringStore, engine.RecordStore, store.RecordLister,
// store.Cache and store.Limiter, and passes the conformance suites the memory and
// Redis stores pass (storetest).
//
// Writes go first to a journal beside the file (journal.go): a commit appends its
// batch to the journal in one write. Once the journal holds 4 MiB it is retired (renamed
// aside, a new one taking the commits) and, in the background while commits go on, one
// bbolt transaction (a checkpoint) applies its writes to the file, leaving out the
// values the journal itself deletes (a request's rewritten states and records), and
// the file is fsynced before the retired journal is emptied; Open applies what a crash
// left in the journals, the retired one first.
//
// Durability (Options.Sync): a write returns once the commit that holds it has
// returned, so whatever the mode, an answered write is in the journal as the kernel
// sees it and survives the daemon's crash or a SIGKILL. The mode decides when it
// reaches the disk, which is what a power loss or a kernel crash keeps:
//
//   - SyncAlways: every commit's journal write is fsynced before its writes return:
//     a power loss loses no answered write. The fsync is most of a commit's cost.
//   - SyncInterval (the default): commits are not fsynced; a background fsync every
//     Options.SyncEvery (DefaultSyncEvery) puts what was committed since on disk, as
//     Redis's appendfsync everysec does. A power loss loses the writes of the last
//     interval at most (a journal frame that did not reach the disk whole ends the
//     journal: its checksum does not match) and never damages the bolt file, which
//     only checkpoints write, fsynced.
//   - SyncNone: nothing is fsynced while the store runs, checkpoints included; the
//     kernel writes back when it will (Close still fsyncs).
//
// A failed fsync (in the background too) stops the store, like a failed commit.
//
// Writes are group-committed: a writer that waits for its write commits, in its own
// goroutine, every write queued when no other commit is running, in one transaction;
// writers that find a commit running wait for it and then for the next, which one of
// them runs. So a lone write waits for its own commit only, and concurrent writes
// share one. A write's context is checked before it is queued, not while it waits:
// once queued, its outcome is the commit's. Writes made under Defer wait together
// (engine.DeferringStore): the driver's state and record writes of one stage call or
// one bound check go into one commit.
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
	"sync"
	"sync/atomic"
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

// Sync is a durability mode: when commits are fsynced (see the package doc).
type Sync string

// The durability modes.
const (
	SyncAlways   Sync = "always"
	SyncInterval Sync = "interval"
	SyncNone     Sync = "none"
)

// DefaultSyncEvery is how often SyncInterval fsyncs when Options.SyncEvery is 0.
const DefaultSyncEvery = time.Second

// ParseSync returns the mode named s, or an error naming the modes.
func ParseSync(s string) (Sync, error) {
	switch m := Sync(s); m {
	case SyncAlways, SyncInterval, SyncNone:
		return m, nil
	}
	return "", fmt.Errorf("unknown durability mode %q (modes: always, interval, none)", s)
}

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
	// Sync is the durability mode; "" means SyncInterval.
	Sync Sync
	// SyncEvery is how often SyncInterval fsyncs the file; 0 means DefaultSyncEvery.
	SyncEvery time.Duration
}

// The file holds one bucket, the log: each value written is stored under its write
// stamp (8 bytes, big-endian), so that writes append at the end of the B+tree rather
// than dirty pages all over it, and each rewrite deletes the value it replaces. A
// value is its kind, its key, its expiry and its revision, then its payload (see encodeValue); the
// index in memory maps each kind's keys to their stamps.
var bucketLog = []byte("log")

// Kinds of entries.
const (
	kindState  byte = 's'
	kindRecord byte = 'r'
	kindCache  byte = 'c'
	kindWindow byte = 'w'
	// kindApproval is an approval slot's approval (approvals.go).
	kindApproval byte = 'a'
	// kindRuns is a state's runs written apart by a claim (PutRun), which replace
	// those its state value holds.
	kindRuns byte = 'u'
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
	// approvals indexes the approvals by slot.
	approvals *expiring.Map[entry]
	stamp     uint64 // the last write stamp given
	// next is the batch of writes the next commit takes; pending the values of the
	// writes not yet in the bolt file (queued, or in the journal and not yet
	// checkpointed), by stamp.
	next    *batch
	pending map[uint64][]byte
	// recent holds the records written last, by request id, as given to Put (Get
	// copies them rather than decoding the file's); recentOrder is their write order, a
	// ring whose next slot is recentNext (see remember).
	recent      map[string]recentRecord
	recentOrder []recentKey
	recentNext  int
	// stateSize and recordSize are the payload sizes of the state and the record
	// written last: what a new one's draft makes room for (room).
	stateSize, recordSize atomic.Int64
	// broken is the failure of a commit or an fsync, after which the store refuses
	// every call.
	broken error
	closed bool
	// unsynced says a commit has returned since the last fsync (SyncInterval); syncs
	// counts the background fsyncs, commits the commits.
	unsynced bool
	syncs    int
	commits  int

	// turn is closed, and replaced, each time s.committing is released (release):
	// writers that found it held wait on it to try to run the next commit.
	turn chan struct{}

	// syncFile fsyncs the bolt file and the journal (sync), which tests wrap.
	syncFile func() error

	// committing is held while a commit runs, by the writer or the goroutine running
	// it: one at a time, in the order the batches were queued. It guards journaled and
	// retired, and journal with syncing.
	committing sync.Mutex
	// journal is the journal commits append to; journaled its writes, in the order
	// they were committed.
	journal   *journal
	journaled []write
	// retired is the journal being checkpointed (RetiredJournalName), nil when none
	// is: a journal is retired only once the one before it is checkpointed.
	retired *retiredJournal
	// syncing is held while the journal is fsynced (sync) or replaced (retire).
	syncing sync.Mutex
	// checkpointing is held while a checkpoint runs (checkpointLoop, drain); taken
	// before committing.
	checkpointing sync.Mutex
	retiredKick   chan struct{}

	kick chan struct{}
	quit chan struct{}
	wg   sync.WaitGroup
}

// entry is the index's view of one stored value: its write stamp (its key in the
// log), its revision (for a rate-limit window, its count), for a window its end, for a
// record its summary (never changed once stored), and for a state the stamp of its
// runs written apart since (0 for none) and the size of its rest.
type entry struct {
	stamp    uint64
	revision int64
	ends     time.Time
	summary  *store.Summary
	runs     uint64
	rest     int64
}

// batch is the writes one commit takes, in the order they were decided; done is
// closed once the commit has returned, err then its failure.
type batch struct {
	writes []write
	done   chan struct{}
	err    error
}

// write puts value under stamp in the log, or deletes stamp's value when value is
// nil.
type write struct {
	stamp uint64
	value []byte
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
	opts.SyncEvery = cmp.Or(max(opts.SyncEvery, 0), DefaultSyncEvery)
	if opts.Sync == "" {
		opts.Sync = SyncInterval
	}
	if _, err := ParseSync(string(opts.Sync)); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout: time.Second,
		// The free list is rebuilt at open rather than written by every commit.
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
		// Only checkpoints write the file: each is fsynced, but in SyncNone.
		NoSync: opts.Sync == SyncNone,
		// Mapped at its bound's size from the start, the file is not mapped again as
		// it grows towards it: a new mapping copies every node a checkpoint holds out
		// of the old one and waits for the reads under way.
		InitialMmapSize: mmapSize(opts.MaxBytes),
		// A checkpoint appends values of a few KiB each, and bbolt writes each page it
		// dirties with a write of its own: a 16 KiB page holds several values where a
		// 4 KiB one holds one. (A file keeps the page size it was created with.)
		PageSize: 16 << 10,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%s is in use by another process (its lock is held)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &Store{
		db: db, path: path, opts: opts, now: time.Now,
		requests:    expiring.NewSized[entry](opts.MaxEntries, opts.MaxBytes/2),
		records:     expiring.NewSized[entry](opts.Retention.MaxRecords, opts.MaxBytes/4),
		failed:      expiring.NewSized[entry](opts.MaxFailedRecords, opts.MaxBytes/4),
		cache:       expiring.New[entry](opts.MaxEntries),
		windows:     expiring.New[entry](maxWindows),
		approvals:   expiring.New[entry](opts.MaxEntries),
		next:        &batch{done: make(chan struct{})},
		pending:     map[uint64][]byte{},
		recent:      map[string]recentRecord{},
		turn:        make(chan struct{}),
		kick:        make(chan struct{}, 1),
		retiredKick: make(chan struct{}, 1),
		quit:        make(chan struct{}),
	}
	s.syncFile = s.sync
	for _, m := range s.maps() {
		m.OnEvict(func(_ string, e entry) { s.drop(e) })
	}
	if s.journal, err = openJournal(filepath.Join(dir, JournalName)); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := s.load(dir); err != nil {
		_ = s.journal.f.Close()
		_ = db.Close()
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	s.wg.Add(3)
	go s.commitLoop()
	go s.checkpointLoop()
	go s.sweepLoop()
	if opts.Sync == SyncInterval {
		s.wg.Add(1)
		go s.syncLoop()
	}
	s.mu.Lock()
	b := s.next
	s.mu.Unlock()
	if len(b.writes) > 0 {
		if err := s.wait(b); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// maps are the maps of the index.
func (s *Store) maps() []*expiring.Map[entry] {
	return []*expiring.Map[entry]{s.requests, s.records, s.failed, s.cache, s.windows, s.approvals}
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Close commits the writes queued, stops the sweep, the committer and the background
// fsync, fsyncs the file (whatever the mode) and closes it; calls after Close fail.
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
	err := s.drain()
	if s.opts.Sync != SyncAlways {
		if serr := s.syncFile(); serr != nil {
			err = errors.Join(err, fmt.Errorf("fsync %s: %w", s.path, serr))
		}
	}
	return errors.Join(err, s.journal.f.Close(), s.db.Close())
}

// sync fsyncs the bolt file, then the journal.
func (s *Store) sync() error {
	if err := s.db.Sync(); err != nil {
		return err
	}
	s.syncing.Lock()
	defer s.syncing.Unlock()
	return s.journal.f.Sync()
}

// value is a decoded log value: the kind and key of the entry, when it expires (Unix
// nanoseconds, 0: never), its revision (for a rate-limit window, its count) and its
// payload.
type value struct {
	kind     byte
	key      string
	expires  int64
	revision int64
	payload  []byte
}

// A log value is
//
//	kind (1 byte) | key length (uvarint) | key | expires (8) | revision (8) | payload
//
// A writer encodes it as a draft before its write is decided, appending the payload
// in place, and seals it with its expiry and revision once they are decided.

// draft is a log value being encoded: its header, with the expiry and revision left
// zero, then what has been appended to its payload.
type draft struct {
	b    []byte
	head int // where the expiry goes
}

// newDraft starts the log value of kind and key, with room for size payload bytes.
func newDraft(kind byte, key string, size int) draft {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(key)+16+size)
	b = append(b, kind)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	return draft{b: append(b, make([]byte, 16)...), head: len(b)}
}

// payload returns the payload appended so far.
func (d draft) payload() []byte { return d.b[d.head+16:] }

// seal sets the value's expiry and revision and returns it.
func (d draft) seal(expires, revision int64) []byte {
	binary.BigEndian.PutUint64(d.b[d.head:], uint64(expires))
	binary.BigEndian.PutUint64(d.b[d.head+8:], uint64(revision))
	return d.b
}

// appendPart appends the first part of a two-part payload (see split): its length,
// then what add appends.
func (d *draft) appendPart(add func(b []byte) ([]byte, error)) error {
	at := len(d.b) + 4
	b, err := add(append(d.b, 0, 0, 0, 0))
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(b[at-4:], uint32(len(b)-at))
	d.b = b
	return nil
}

// room is the payload room a draft makes, given the payload size of the value of its
// kind written last: that and an eighth, for a value that grew since.
func room(last *atomic.Int64) int {
	n := int(last.Load())
	return n + n/8
}

// appendState appends the payload of st, a state (see GetRequest), and returns the
// size of its rest.
func (d *draft) appendState(st *engine.RequestState) (int64, error) {
	err := d.appendPart(func(b []byte) ([]byte, error) { return store.AppendRuns(b, st.Runs) })
	if err != nil {
		return 0, err
	}
	at := len(d.b)
	if d.b, err = store.AppendState(d.b, st); err != nil {
		return 0, err
	}
	return int64(len(d.b) - at), nil
}

// encodeValue is the log value of v with the payload parts payload.
func encodeValue(v value, payload ...[]byte) []byte {
	n := 0
	for _, p := range payload {
		n += len(p)
	}
	d := newDraft(v.kind, v.key, n)
	for _, p := range payload {
		d.b = append(d.b, p...)
	}
	return d.seal(v.expires, v.revision)
}

// decodeValue decodes a log value; the payload shares b.
func decodeValue(b []byte) (value, error) {
	if len(b) < 1 {
		return value{}, errors.New("empty log value")
	}
	n, w := binary.Uvarint(b[1:])
	if w <= 0 || n > uint64(len(b)) || 1+w+int(n)+16 > len(b) {
		return value{}, fmt.Errorf("malformed log value of %d bytes", len(b))
	}
	k := 1 + w + int(n)
	return value{
		kind: b[0], key: string(b[1+w : k]),
		expires:  int64(binary.BigEndian.Uint64(b[k:])),
		revision: int64(binary.BigEndian.Uint64(b[k+8:])),
		payload:  b[k+16:],
	}, nil
}

// expiry is the expiry of t in a value (0 for the zero time) and back.
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

// mmapSize is the size the file is mapped at when it opens: twice maxBytes (what the
// states and records may take, beside free pages and the cache), at most 4 GiB. It is
// address space, not memory: only the pages read are resident.
func mmapSize(maxBytes int64) int {
	return int(min(2*maxBytes, 4<<30))
}

func stampKey(stamp uint64) []byte { return binary.BigEndian.AppendUint64(nil, stamp) }

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

// put queues the write of b, the log value of key, under the next write stamp, and
// the deletion of the values it replaces (old, the index entry of key in m, live or
// expired; none when m holds none). It returns the stamp and the value's size. The
// caller holds s.mu and then stores the returned stamp in the index.
func (s *Store) put(m *expiring.Map[entry], key string, b []byte) (uint64, int64) {
	if old, ok := m.Peek(key); ok {
		s.drop(old)
	}
	return s.add(b), int64(len(b))
}

// add queues the write of b, a new log value, under the next write stamp and returns
// the stamp. The caller holds s.mu.
func (s *Store) add(b []byte) uint64 {
	s.stamp++
	s.queue(s.stamp, b)
	return s.stamp
}

// drop queues the deletion of the values of e, an entry the index no longer holds.
// The caller holds s.mu.
func (s *Store) drop(e entry) {
	s.queue(e.stamp, nil)
	if e.runs != 0 {
		s.queue(e.runs, nil)
	}
}

// queue adds a write of b under stamp (nil: the deletion of stamp's value) to the
// next batch. The caller holds s.mu.
func (s *Store) queue(stamp uint64, b []byte) {
	s.next.writes = append(s.next.writes, write{stamp: stamp, value: b})
	if b != nil {
		s.pending[stamp] = b
	}
}

// lookup returns the value of key if the index holds it live in one of ms: the
// pending value or else the committed one; ok false when there is none. Its payload
// is the caller's.
func (s *Store) lookup(ctx context.Context, key string, ms ...*expiring.Map[entry]) (v value, ok bool, err error) {
	e, vals, ok, err := s.read(ctx, key, ms...)
	if err != nil || !ok {
		return value{}, false, err
	}
	if v, err = decodeValue(vals[0]); err != nil {
		return value{}, false, fmt.Errorf("%s: stamp %d: %w", s.path, e.stamp, err)
	}
	return v, true, nil
}

// read returns the index entry of key if one of ms holds it live, and its values, as
// of one moment: the value under its stamp and, for a state whose runs were written
// apart, the value under its runs' stamp, each the pending value or else the
// committed one; ok false when there is none.
func (s *Store) read(ctx context.Context, key string, ms ...*expiring.Map[entry]) (e entry, vals [2][]byte, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return entry{}, vals, false, err
	}
	for {
		s.mu.Lock()
		if err := s.usable(); err != nil {
			s.mu.Unlock()
			return entry{}, vals, false, err
		}
		live, now := false, s.now()
		for _, m := range ms {
			if f, ok := m.Get(key, now); ok {
				e, live = f, true
			}
		}
		stamps := [2]uint64{e.stamp, e.runs}
		committed := false
		for i, stamp := range stamps {
			var pending bool
			if vals[i], pending = s.pending[stamp]; stamp != 0 && !pending {
				committed = true
			}
		}
		s.mu.Unlock()
		if !live {
			return entry{}, vals, false, nil
		}
		if !committed {
			return e, vals, true, nil
		}
		// Committed: the log holds it unless it has been replaced or evicted since,
		// and then the index has moved on.
		gone := false
		err := s.db.View(func(tx *bbolt.Tx) error {
			log := tx.Bucket(bucketLog)
			for i, stamp := range stamps {
				if stamp != 0 && vals[i] == nil {
					vals[i] = bytes.Clone(log.Get(stampKey(stamp)))
					gone = gone || vals[i] == nil
				}
			}
			return nil
		})
		if err != nil {
			return entry{}, vals, false, fmt.Errorf("%w: read %s: %w", store.ErrUnavailable, s.path, err)
		}
		if !gone {
			return e, vals, true, nil
		}
		vals = [2][]byte{}
	}
}

// deferKey is the context key of the writes of s deferred by Defer.
type deferKey struct{ s *Store }

// deferral is the batches the writes made under one Defer went into; done is set by
// its flush, after which writes wait for themselves.
type deferral struct {
	mu      sync.Mutex
	done    bool
	batches []*batch
}

// Defer implements engine.DeferringStore: the writes made with the returned context
// (states, runs, records and cache entries; a rate-limit event waits for its count)
// are queued and return without
// waiting for their commit, and flush waits for every commit they went into (usually
// one: the writes of one caller queue into the same batch unless a commit starts
// between them), running it itself when none runs. As every write waits for its
// commit before flush returns, the contract of the package doc holds: a call is
// answered only after what it wrote is in the file.
func (s *Store) Defer(ctx context.Context) (context.Context, func() error) {
	if _, ok := ctx.Value(deferKey{s}).(*deferral); ok {
		return ctx, func() error { return nil }
	}
	d := &deferral{}
	flush := func() error {
		d.mu.Lock()
		d.done = true
		batches := d.batches
		d.mu.Unlock()
		for _, b := range batches {
			if err := s.wait(b); err != nil {
				return err // a failed commit broke the store: the later ones fail too
			}
		}
		return nil
	}
	return context.WithValue(ctx, deferKey{s}, d), flush
}

// settle waits for the commit of batch b, which the caller's write went into, or, for
// a write made under Defer before its flush, leaves it to the flush.
func (s *Store) settle(ctx context.Context, b *batch) error {
	if d, ok := ctx.Value(deferKey{s}).(*deferral); ok {
		d.mu.Lock()
		defer d.mu.Unlock()
		if !d.done {
			if n := len(d.batches); n == 0 || d.batches[n-1] != b {
				d.batches = append(d.batches, b)
			}
			return nil
		}
	}
	return s.wait(b)
}

// wait returns once the commit of batch b, which the caller's writes went into (under
// s.mu, which the caller has released since), has returned, with its error. While no
// other commit runs, the caller runs the next itself (b, or a batch before b when b
// was queued while that batch's commit was waiting to start, then b).
func (s *Store) wait(b *batch) error {
	for {
		s.mu.Lock()
		turn := s.turn
		s.mu.Unlock()
		select {
		case <-b.done:
			return b.err
		default:
		}
		if s.runCommit(false) {
			continue
		}
		select {
		case <-b.done:
			return b.err
		case <-turn:
		}
	}
}

// load applies to the log the writes the journal holds (what a crash left there), fills
// the index from the log, in write order, and queues the deletion of what has expired,
// was replaced or was written past a bound. The bolt file is fsynced, and the journal
// emptied, once it holds the journal's writes.
func (s *Store) load(dir string) error {
	replayed, err := s.journal.replay()
	if err != nil {
		return err
	}
	retired, whole, err := replayRetired(filepath.Join(dir, RetiredJournalName))
	if err != nil {
		return err
	}
	if !whole {
		replayed = nil
	}
	replayed = append(retired, replayed...)
	now := s.now()
	err = s.db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketLog)
		if err != nil {
			return err
		}
		if err := apply(tx, replayed); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		var migrated []write
		err = b.ForEach(func(k, b []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("log key %x is no write stamp", k)
			}
			stamp := binary.BigEndian.Uint64(k)
			s.stamp = max(s.stamp, stamp)
			v, err := decodeValue(b)
			if err != nil {
				return fmt.Errorf("stamp %d: %w", stamp, err)
			}
			e := entry{stamp: stamp, revision: v.revision}
			var m *expiring.Map[entry]
			switch v.kind {
			case kindState:
				if writtenWhole(v.payload) {
					if b, err = splitWhole(v); err != nil {
						return fmt.Errorf("request state %q: %w", v.key, err)
					}
					migrated = append(migrated, write{stamp: stamp, value: b})
					if v, err = decodeValue(b); err != nil {
						return fmt.Errorf("stamp %d: %w", stamp, err)
					}
				}
				_, rest, err := split(v.payload)
				if err != nil {
					return fmt.Errorf("request state %q: %w", v.key, err)
				}
				m, e.rest = s.requests, int64(len(rest))
			case kindRuns:
				// Written after its state's value: it replaces the state's runs, revision
				// and expiry. A state gone since leaves it behind, deleted here.
				st, ok := s.requests.Peek(v.key)
				if !ok {
					s.queue(stamp, nil)
					return nil
				}
				if st.runs != 0 {
					s.queue(st.runs, nil)
				}
				st.runs, st.revision = stamp, v.revision
				s.requests.PutSized(v.key, st, st.rest+int64(len(b)), expiryTime(v.expires))
				return nil
			case kindCache:
				m = s.cache
			case kindApproval:
				m = s.approvals
			case kindWindow:
				m, e.ends = s.windows, expiryTime(v.expires)
			case kindRecord:
				sum, _, err := split(v.payload)
				if err == nil {
					e.summary = new(store.Summary)
					err = json.Unmarshal(sum, e.summary)
				}
				if err != nil {
					return fmt.Errorf("record %q: %w", v.key, err)
				}
				m = s.records
				if e.summary.Status == engine.RecordFailed {
					m = s.failed
				}
				if old, ok := s.recordPeek(v.key); ok {
					s.records.Delete(v.key)
					s.failed.Delete(v.key)
					s.queue(old.stamp, nil)
				}
			default:
				return fmt.Errorf("stamp %d: unknown kind %q", stamp, v.kind)
			}
			if old, ok := m.Peek(v.key); ok { // a value replaced and not deleted
				s.drop(old)
			}
			// A state's expiry is judged once its runs written apart, which extend it,
			// are read too (below).
			if v.kind != kindState && v.expires != 0 && now.UnixNano() >= v.expires {
				m.Delete(v.key)
				s.queue(stamp, nil)
				return nil
			}
			m.PutSized(v.key, e, int64(len(b)), expiryTime(v.expires))
			return nil
		})
		if err != nil {
			return err
		}
		s.requests.Sweep(now, s.requests.Len(), func(_ string, e entry) { s.drop(e) })
		for _, w := range migrated {
			if err := b.Put(stampKey(w.stamp), w.value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || s.journal.size == 0 && len(replayed) == 0 {
		return err
	}
	if err := s.db.Sync(); err != nil {
		return err
	}
	if err := s.journal.empty(true); err != nil {
		return err
	}
	return removeRetired(dir)
}

// recordPeek returns the index entry of the record of id, live or expired, in
// whichever map holds it. The caller holds s.mu.
func (s *Store) recordPeek(id string) (entry, bool) {
	if e, ok := s.records.Peek(id); ok {
		return e, true
	}
	return s.failed.Peek(id)
}

// commitLoop commits the writes no writer waits for (the sweep's deletions) whenever
// kicked, and at Close what is left.
func (s *Store) commitLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.kick:
		case <-s.quit:
			s.committing.Lock()
			s.commit()
			s.release()
			return
		}
		s.runCommit(true)
	}
}

// commit appends the next batch to the journal in one frame (fsynced in SyncAlways)
// and answers its writers; once the journal holds checkpointBytes and none is being
// checkpointed, it retires the journal for the checkpointer. A failed commit breaks
// the store. The caller holds s.committing.
func (s *Store) commit() {
	s.mu.Lock()
	b := s.next
	if len(b.writes) == 0 {
		s.mu.Unlock()
		return
	}
	s.next = &batch{done: make(chan struct{})}
	s.mu.Unlock()
	err := s.journal.append(b.writes, s.opts.Sync == SyncAlways)
	if err == nil {
		s.journaled = append(s.journaled, b.writes...)
	}
	s.mu.Lock()
	if err != nil {
		b.err = fmt.Errorf("%w: commit to %s: %w", store.ErrUnavailable, s.path, err)
		s.broken = err
	}
	s.unsynced = true
	s.commits++
	s.mu.Unlock()
	close(b.done)
	if err == nil && s.journal.size >= checkpointBytes && s.retired == nil {
		if err := s.retire(); err != nil {
			_ = s.fail(fmt.Errorf("retire the journal: %w", err))
		}
	}
}

// fail stops the store with err, unless a failure stopped it already, and returns
// err. The caller does not hold s.mu.
func (s *Store) fail(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken == nil {
		s.broken = err
	}
	return err
}

// retiredJournal is a journal retired for a checkpoint, and its writes.
type retiredJournal struct {
	j      *journal
	writes []write
}

// retire renames the journal aside (RetiredJournalName), opens a new journal for the
// commits that follow and kicks the checkpointer. In SyncAlways it fsyncs the
// directory, so that the new journal survives a power loss as its fsynced commits
// must (in SyncInterval the checkpointer does, within the interval). The retired
// journal is not fsynced here: if a power loss cuts it short, Open drops the newer
// journal's writes too (see replayRetired). The caller holds s.committing, and no
// journal is retired.
func (s *Store) retire() error {
	dir := filepath.Dir(s.path)
	if err := os.Rename(filepath.Join(dir, JournalName), filepath.Join(dir, RetiredJournalName)); err != nil {
		return err
	}
	next, err := openJournal(filepath.Join(dir, JournalName))
	if err != nil {
		return err
	}
	if s.opts.Sync == SyncAlways {
		if err := syncDir(dir); err != nil {
			_ = next.f.Close()
			return err
		}
	}
	s.syncing.Lock()
	s.retired = &retiredJournal{j: s.journal, writes: s.journaled}
	s.journal, s.journaled = next, nil
	s.syncing.Unlock()
	select {
	case s.retiredKick <- struct{}{}:
	default:
	}
	return nil
}

// checkpointLoop checkpoints each retired journal, in the background: commits go on
// into the new journal meanwhile.
func (s *Store) checkpointLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.retiredKick:
		case <-s.quit:
			return
		}
		s.checkpointing.Lock()
		s.committing.Lock()
		r := s.retired
		s.release()
		if r != nil && s.checkpointRetired(r) == nil {
			s.committing.Lock()
			s.retired = nil
			s.release()
		}
		s.checkpointing.Unlock()
	}
}

// checkpointRetired checkpoints the retired journal r and closes it. In SyncInterval
// it first fsyncs the directory, for the new journal (see retire). The caller holds
// s.checkpointing.
func (s *Store) checkpointRetired(r *retiredJournal) error {
	if s.opts.Sync == SyncInterval {
		if err := syncDir(filepath.Dir(s.path)); err != nil {
			return s.fail(fmt.Errorf("fsync %s: %w", filepath.Dir(s.path), err))
		}
	}
	if err := s.checkpoint(r.j, r.writes); err != nil {
		return err
	}
	return r.j.f.Close()
}

// drain checkpoints the retired journal, if any, then the journal, holding off
// commits: afterwards the bolt file holds every write committed. It runs at Close, and
// in tests.
func (s *Store) drain() error {
	s.checkpointing.Lock()
	defer s.checkpointing.Unlock()
	s.committing.Lock()
	defer s.release()
	if r := s.retired; r != nil {
		if err := s.checkpointRetired(r); err != nil {
			return err
		}
		s.retired = nil
		if err := removeRetired(filepath.Dir(s.path)); err != nil {
			return err
		}
	}
	if err := s.checkpoint(s.journal, s.journaled); err != nil {
		return err
	}
	clear(s.journaled)
	s.journaled = s.journaled[:0]
	return nil
}

// checkpoint applies writes, those journal j holds, to the bolt file in one
// transaction, empties j and drops the values it held from pending: reads find them
// in the bolt file from then on. Unless in SyncNone, the bolt file is fsynced before
// j is emptied, and the emptying is fsynced: a power loss neither drops writes j held
// before they are on disk in the bolt file (even interval's, older than its last
// fsync) nor brings back a journal whose writes the file has since replaced. A failed
// checkpoint breaks the store.
func (s *Store) checkpoint(j *journal, writes []write) error {
	if len(writes) == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bbolt.Tx) error { return apply(tx, writes) }) // fsynced unless NoSync
	if err == nil {
		err = j.empty(s.opts.Sync != SyncNone)
	}
	if err != nil {
		return s.fail(fmt.Errorf("checkpoint: %w", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range writes {
		if w.value != nil {
			delete(s.pending, w.stamp)
		}
	}
	return nil
}

// runCommit runs the next commit, holding s.committing; with wait false it runs none
// when another commit runs, and reports whether it ran one.
func (s *Store) runCommit(wait bool) bool {
	if wait {
		s.committing.Lock()
	} else if !s.committing.TryLock() {
		return false
	}
	s.commit()
	s.release()
	return true
}

// release releases s.committing and ends the turn: writers that found it held, by a
// commit or by anything else (the checkpointer, drain), try again to run the next
// commit. Whoever holds s.committing releases it so, or a writer could wait for a
// commit that no one runs.
func (s *Store) release() {
	s.committing.Unlock()
	s.mu.Lock()
	close(s.turn)
	s.turn = make(chan struct{})
	s.mu.Unlock()
}

// syncLoop is SyncInterval's background fsync: every SyncEvery, it fsyncs the file if
// a commit has returned since the last fsync. A failed fsync breaks the store (what
// the kernel failed to write back may be gone from its cache too).
func (s *Store) syncLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.quit:
			return
		}
		s.mu.Lock()
		dirty, syncFile := s.unsynced, s.syncFile
		s.unsynced = false
		s.mu.Unlock()
		if !dirty {
			continue
		}
		err := syncFile()
		s.mu.Lock()
		s.syncs++
		if err != nil && s.broken == nil {
			s.broken = fmt.Errorf("fsync: %w", err)
		}
		s.mu.Unlock()
	}
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
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
	}
}

// sweep removes from the index the expired entries of each kind it examines and
// queues their deletion; it returns how many it removed.
func (s *Store) sweep(now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.maps() {
		m.Sweep(now, sweepLimit, func(_ string, e entry) {
			s.drop(e)
			n++
		})
	}
	return n
}

// tooLarge is the error of a write of request id's state or record over its limit.
func tooLarge(what, id string, size int, limit int64) error {
	return fmt.Errorf("%w: request %q %s is %d bytes, over the limit of %d", engine.ErrTooLarge, id, what, size, limit)
}
