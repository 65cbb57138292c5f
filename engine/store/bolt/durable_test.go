package bolt

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

func openDir(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// keys returns the keys of the entries of kind in the bolt file once the journal's
// writes are checkpointed into it, sorted, failing the test when a key has more than
// one value there.
func keys(t *testing.T, s *Store, kind byte) []string {
	t.Helper()
	if err := s.drain(); err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketLog).ForEach(func(_, b []byte) error {
			v, err := decodeValue(b)
			if err == nil && v.kind == kind {
				out = append(out, v.key)
			}
			return err
		})
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	if len(slices.Compact(slices.Clone(out))) != len(out) {
		t.Fatalf("a key has several values in the file: %v", out)
	}
	return out
}

func record(id string, rev int64, status engine.RecordStatus, at time.Time) *engine.ExecutionRecord {
	return &engine.ExecutionRecord{RequestID: id, Revision: rev, Status: status, Generation: "g-1", FinalResponse: "hi",
		CreatedAt: at, UpdatedAt: at}
}

// Everything a store holds is there after it is closed and opened again: states,
// records with their summaries and revisions (the gate holds), cache entries and
// rate-limit windows with their counts.
func TestStore_EverythingSurvivesReopening(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	at := time.Now().UTC().Truncate(time.Millisecond)
	for i, status := range []engine.RecordStatus{engine.RecordSucceeded, engine.RecordFailed, engine.RecordRunning} {
		if err := s.Put(ctx, record(fmt.Sprint("req-", i), 3, status, at.Add(time.Duration(i)*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutRequest(ctx, &engine.RequestState{ID: "req-0", Request: "buy", Revision: 4}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.PutCache(ctx, "k", store.CacheEntry{Response: "42"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Allow(ctx, "tenant", 2, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDir(t, dir, Options{})
	if rec, err := s.Get(ctx, "req-1"); err != nil || rec.Status != engine.RecordFailed || rec.Revision != 3 || rec.FinalResponse != "hi" {
		t.Fatalf("record after reopening = %+v, %v", rec, err)
	}
	if err := s.Put(ctx, record("req-1", 3, engine.RecordFailed, at)); !errors.Is(err, engine.ErrStaleRevision) {
		t.Fatalf("a stale record write after reopening: err = %v, want ErrStaleRevision", err)
	}
	if st, ok, err := s.GetRequest(ctx, "req-0"); !ok || err != nil || st.Request != "buy" || st.Revision != 4 {
		t.Fatalf("state after reopening = %+v, %v, %v", st, ok, err)
	}
	if err := s.PutRequest(ctx, &engine.RequestState{ID: "req-0", Revision: 4}, time.Hour); !errors.Is(err, engine.ErrStaleRevision) {
		t.Fatalf("a stale state write after reopening: err = %v, want ErrStaleRevision", err)
	}
	if e, ok, err := s.GetCache(ctx, "k"); !ok || err != nil || e.Response != "42" {
		t.Fatalf("cache after reopening = %+v, %v, %v", e, ok, err)
	}
	if ok, err := s.Allow(ctx, "tenant", 2, time.Hour); ok || err != nil {
		t.Fatalf("a third event in a window of 2 after reopening: allowed %v, %v", ok, err)
	}
	page, err := s.List(ctx, store.Query{Status: engine.RecordFailed})
	if err != nil || len(page.Records) != 1 || page.Records[0].RequestID != "req-1" {
		t.Fatalf("failed records listed after reopening = %+v, %v", page, err)
	}
	page, _ = s.List(ctx, store.Query{})
	if len(page.Records) != 3 || page.Records[0].RequestID != "req-2" {
		t.Fatalf("records listed after reopening = %+v", page)
	}
}

// The bounds hold in the file: the oldest records written past them are deleted, and
// reopening with smaller bounds deletes what no longer fits, oldest first.
func TestStore_BoundsEvictTheOldestFromTheFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir, Options{Retention: store.Retention{MaxRecords: 5}})
	at := time.Now().UTC()
	for i := range 8 {
		if err := s.Put(ctx, record(fmt.Sprintf("req-%d", i), 1, engine.RecordSucceeded, at)); err != nil {
			t.Fatal(err)
		}
	}
	// A failed record counts against its own bound.
	if err := s.Put(ctx, record("bad", 1, engine.RecordFailed, at)); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, kindRecord); strings.Join(got, ",") != "bad,req-3,req-4,req-5,req-6,req-7" {
		t.Fatalf("records in the file = %v", got)
	}
	if _, err := s.Get(ctx, "req-2"); !errors.Is(err, engine.ErrRecordNotFound) {
		t.Fatalf("an evicted record: err = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir, Options{Retention: store.Retention{MaxRecords: 2}})
	if got := keys(t, s, kindRecord); strings.Join(got, ",") != "bad,req-6,req-7" {
		t.Fatalf("records in the file after reopening with a bound of 2 = %v", got)
	}
}

// Expired entries are never served, and the sweep deletes them from the file.
func TestStore_ExpiredEntriesAreSwept(t *testing.T) {
	ctx := context.Background()
	s := openDir(t, t.TempDir(), Options{Retention: store.Retention{Success: 30 * time.Millisecond, Error: time.Hour}, SweepEvery: 10 * time.Millisecond})
	at := time.Now().UTC()
	for _, rec := range []*engine.ExecutionRecord{record("ok", 1, engine.RecordSucceeded, at), record("bad", 1, engine.RecordFailed, at)} {
		if err := s.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutCache(ctx, "k", store.CacheEntry{Response: "x"}, 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRequest(ctx, &engine.RequestState{ID: "st", Revision: 1}, 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, cache, states := keys(t, s, kindRecord), keys(t, s, kindCache), keys(t, s, kindState)
		if strings.Join(recs, ",") == "bad" && len(cache) == 0 && len(states) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the sweep: records %v, cache %v, states %v; want [bad] and nothing else", recs, cache, states)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := s.Get(ctx, "ok"); !errors.Is(err, engine.ErrRecordNotFound) {
		t.Fatalf("an expired record: err = %v", err)
	}
}

// Each way a call fails has its error kind.
func TestStore_ErrorKinds(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		call func(s *Store) error
		want error
	}{
		{"stale record", func(s *Store) error {
			if err := s.Put(ctx, record("r", 2, engine.RecordRunning, time.Now())); err != nil {
				return err
			}
			return s.Put(ctx, record("r", 2, engine.RecordRunning, time.Now()))
		}, engine.ErrStaleRevision},
		{"record over the limit", func(s *Store) error {
			rec := record("r", 1, engine.RecordRunning, time.Now())
			rec.FinalResponse = strings.Repeat("x", 2000)
			return s.Put(ctx, rec)
		}, engine.ErrTooLarge},
		{"state over the limit", func(s *Store) error {
			return s.PutRequest(ctx, &engine.RequestState{ID: "r", Request: strings.Repeat("x", 2000)}, 0)
		}, engine.ErrTooLarge},
		{"closed store", func(s *Store) error {
			_ = s.Close()
			_, _, err := s.GetRequest(ctx, "r")
			return err
		}, store.ErrUnavailable},
		{"write to a closed store", func(s *Store) error {
			_ = s.Close()
			return s.PutCache(ctx, "k", store.CacheEntry{}, 0)
		}, store.ErrUnavailable},
		{"failed background fsync", func(s *Store) error {
			s.mu.Lock()
			s.syncFile = func() error { return errors.New("EIO") }
			s.mu.Unlock()
			if err := s.PutCache(ctx, "k", store.CacheEntry{}, 0); err != nil {
				return err
			}
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if _, _, err := s.GetCache(ctx, "k"); err != nil {
					if !strings.Contains(err.Error(), "fsync: EIO") {
						t.Errorf("err = %v, want the fsync's failure named", err)
					}
					return err
				}
			}
			return nil
		}, store.ErrUnavailable},
		{"canceled context", func(s *Store) error {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err := s.Allow(cctx, "k", 1, time.Minute)
			return err
		}, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openDir(t, t.TempDir(), Options{MaxStateBytes: 1000, MaxRecordBytes: 1000, SyncEvery: 5 * time.Millisecond})
			if err := c.call(s); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

// One process holds the file: a second Open of the same directory fails, saying so.
func TestStore_OneProcessHoldsTheFile(t *testing.T) {
	dir := t.TempDir()
	openDir(t, dir, Options{})
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open: err = %v, want the file in use", err)
	}
}

// A rewrite deletes the value it replaces, also when a record moves between the
// failed and the other records, so the file holds one value per key, before and after
// reopening.
func TestStore_RewritesReplaceTheirValue(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	for rev, status := range []engine.RecordStatus{engine.RecordRunning, engine.RecordFailed, engine.RecordSucceeded, engine.RecordFailed} {
		if err := s.Put(ctx, record("moved", int64(rev+1), status, time.Now())); err != nil {
			t.Fatal(err)
		}
		if err := s.PutRequest(ctx, &engine.RequestState{ID: "moved", Revision: int64(rev + 1)}, time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Allow(ctx, "w", 10, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.PutCache(ctx, "k", store.CacheEntry{Response: fmt.Sprint(rev)}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for reopen := range 2 {
		for kind, want := range map[byte]string{kindRecord: "moved", kindState: "moved", kindWindow: "w", kindCache: "k"} {
			if got := strings.Join(keys(t, s, kind), ","); got != want {
				t.Fatalf("reopened %d times: keys of kind %c = %q, want %q", reopen, kind, got, want)
			}
		}
		if rec, err := s.Get(ctx, "moved"); err != nil || rec.Revision != 4 || rec.Status != engine.RecordFailed {
			t.Fatalf("reopened %d times: record = %+v, %v", reopen, rec, err)
		}
		if page, _ := s.List(ctx, store.Query{}); len(page.Records) != 1 {
			t.Fatalf("reopened %d times: %d records listed, want 1", reopen, len(page.Records))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openDir(t, dir, Options{})
	}
}

// A file holding a value the store cannot read is refused at Open, naming it; a store
// whose commit failed refuses every later call as unavailable.
func TestStore_DamageIsReported(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	if err := s.PutCache(ctx, "k", store.CacheEntry{Response: "x"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.broken = errors.New("disk on fire")
	s.mu.Unlock()
	if _, _, err := s.GetCache(ctx, "k"); !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("a read from a broken store: err = %v", err)
	}
	if err := s.PutCache(ctx, "k", store.CacheEntry{}, 0); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a write to a broken store: err = %v", err)
	}
	if err := s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketLog).Put(stampKey(1<<40), []byte{kindState, 0x05}) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), s.Path()) || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("Open of a damaged file: err = %v", err)
	}
}

// Whatever the durability mode, a write that returned is in the bolt file or the
// journal as the kernel sees it (read through a descriptor of its own: what the
// daemon's SIGKILL keeps), and
// Close fsyncs; the modes differ in when commits are fsynced: every commit's journal
// write in always, a background fsync after commits in interval (the default), none in
// none; bbolt fsyncs each checkpoint but in none.
func TestStore_SyncModes(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		sync Sync
		// perCommit says each commit is fsynced; background that the store fsyncs
		// after commits while it runs; checkpoints that bbolt fsyncs each checkpoint.
		perCommit, background, checkpoints bool
	}{
		{"", false, true, true},
		{SyncAlways, true, false, true},
		{SyncInterval, false, true, true},
		{SyncNone, false, false, false},
	} {
		t.Run(cmp.Or(string(c.sync), "default"), func(t *testing.T) {
			dir := t.TempDir()
			s := openDir(t, dir, Options{Sync: c.sync, SyncEvery: 5 * time.Millisecond})
			var fsyncs atomic.Int32
			s.mu.Lock()
			s.syncFile = func() error { fsyncs.Add(1); return s.sync() }
			s.mu.Unlock()
			if s.db.NoSync == c.checkpoints {
				t.Fatalf("bbolt's NoSync = %v, want %v", s.db.NoSync, !c.checkpoints)
			}
			for i := range 5 {
				rec := record(fmt.Sprint("req-", i), 1, engine.RecordSucceeded, time.Now())
				rec.FinalResponse = fmt.Sprintf("answer-%d-%s", i, c.sync)
				if err := s.Put(ctx, rec); err != nil {
					t.Fatal(err)
				}
				file, err := os.ReadFile(s.Path())
				if err != nil {
					t.Fatal(err)
				}
				journal, err := os.ReadFile(filepath.Join(dir, JournalName))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(file, []byte(rec.FinalResponse)) && !bytes.Contains(journal, []byte(rec.FinalResponse)) {
					t.Fatalf("write %d returned and is not in the file", i)
				}
			}
			if c.background {
				for deadline := time.Now().Add(10 * time.Second); fsyncs.Load() == 0; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("no background fsync after the commits")
					}
				}
			} else if n := fsyncs.Load(); n != 0 {
				t.Fatalf("%d background fsyncs, want none", n)
			}
			before := fsyncs.Load()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if n := fsyncs.Load() - before; n != 1 && !c.perCommit || n != 0 && c.perCommit {
				t.Fatalf("Close fsynced %d times", n)
			}
			s = openDir(t, dir, Options{Sync: c.sync})
			if rec, err := s.Get(ctx, "req-4"); err != nil || rec.FinalResponse != fmt.Sprintf("answer-4-%s", c.sync) {
				t.Fatalf("after reopening: %+v, %v", rec, err)
			}
		})
	}
	if _, err := Open(t.TempDir(), Options{Sync: "sometimes"}); err == nil || !strings.Contains(err.Error(), "always, interval, none") {
		t.Fatalf("Open with an unknown mode: err = %v", err)
	}
}

// A claim (PutRun) writes a state's runs alone, as a value of their own: one per state
// at a time, read back across reopening with the revision and the expiry it gave the
// state, and deleted with the state's value when the state is written whole again or
// expires.
func TestStore_ClaimsAreWrittenApart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	st := &engine.RequestState{ID: "r", Request: "buy", PriorSteps: []engine.RoutingStep{{StepID: "a"}, {StepID: "b"}}, Revision: 1}
	if err := s.PutRequest(ctx, st, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	runs := map[string]*engine.StepRun{}
	for i, step := range []string{"a", "b"} {
		runs[step] = &engine.StepRun{Status: engine.RunStarted, Attempts: 1}
		if err := s.PutRun(ctx, "r", int64(i+2), step, maps.Clone(runs), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if got := keys(t, s, kindRuns); strings.Join(got, ",") != "r" {
		t.Fatalf("runs values in the file = %v, want r's alone", got)
	}
	time.Sleep(60 * time.Millisecond) // past the expiry the state's own value holds
	for reopen := range 2 {
		got, ok, err := s.GetRequest(ctx, "r")
		if err != nil || !ok || got.Request != "buy" || len(got.PriorSteps) != 2 || got.Revision != 3 || len(got.Runs) != 2 || got.Runs["b"].Status != engine.RunStarted {
			t.Fatalf("reopened %d times: state = %+v, %v, %v", reopen, got, ok, err)
		}
		if err := s.PutRun(ctx, "r", 3, "b", runs, time.Hour); !errors.Is(err, engine.ErrStaleRevision) {
			t.Fatalf("reopened %d times: a stale claim: err = %v, want ErrStaleRevision", reopen, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openDir(t, dir, Options{})
	}

	st.Revision, st.Runs = 4, runs
	if err := s.PutRequest(ctx, st, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, states := keys(t, s, kindRuns), keys(t, s, kindState); len(got) != 0 || strings.Join(states, ",") != "r" {
		t.Fatalf("after the state is written whole: runs values %v, states %v; want none and r", got, states)
	}
	if got, ok, err := s.GetRequest(ctx, "r"); err != nil || !ok || got.Revision != 4 || len(got.Runs) != 2 {
		t.Fatalf("state written whole = %+v, %v, %v", got, ok, err)
	}

	s = openDir(t, t.TempDir(), Options{SweepEvery: 10 * time.Millisecond})
	if err := s.PutRequest(ctx, &engine.RequestState{ID: "gone", Revision: 1}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRun(ctx, "gone", 2, "a", runs, 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(keys(t, s, kindState))+len(keys(t, s, kindRuns)) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a state expired after its claim: states %v, runs %v left in the file", keys(t, s, kindState), keys(t, s, kindRuns))
		}
	}
}
