package bolt

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// counts returns the commits the store has made and the values it has queued and not
// yet committed.
func counts(s *Store) (commits, queued int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.next.writes {
		if w.value != nil {
			queued++
		}
	}
	return s.commits, queued
}

// Writes under Defer are decided at once (the gate applied, reads see them) and wait
// for one commit at the flush; a nested Defer leaves the flush to the outer one; a
// write made with the context after its flush waits for its own commit.
func TestDefer_WritesWaitForOneCommitAtTheFlush(t *testing.T) {
	ctx := context.Background()
	s := openDir(t, t.TempDir(), Options{})
	before, _ := counts(s)
	dctx, flush := s.Defer(ctx)
	if err := s.PutRequest(dctx, &engine.RequestState{ID: "r", Request: "buy", Revision: 1}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(dctx, record("r", 1, engine.RecordRunning, time.Now())); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRequest(dctx, &engine.RequestState{ID: "r", Revision: 1}, time.Minute); err == nil {
		t.Fatal("a deferred write of a decided revision was taken again")
	}
	if st, ok, err := s.GetRequest(ctx, "r"); err != nil || !ok || st.Request != "buy" {
		t.Fatalf("GetRequest before the flush = %+v, %v, %v", st, ok, err)
	}
	nested, inner := s.Defer(dctx)
	if err := s.PutRequest(nested, &engine.RequestState{ID: "r", Request: "sell", Revision: 2}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := inner(); err != nil {
		t.Fatal(err)
	}
	if commits, pending := counts(s); commits != before || pending != 3 {
		t.Fatalf("before the flush: %d commits, %d values pending; want %d, 3", commits, pending, before)
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	if commits, pending := counts(s); commits != before+1 || pending != 0 {
		t.Fatalf("after the flush: %d commits, %d values pending; want %d, 0", commits, pending, before+1)
	}
	if got := keys(t, s, kindState); !slices.Equal(got, []string{"r"}) {
		t.Fatalf("states in the file: %v", got)
	}
	if got := keys(t, s, kindRecord); !slices.Equal(got, []string{"r"}) {
		t.Fatalf("records in the file: %v", got)
	}
	if err := s.PutRequest(dctx, &engine.RequestState{ID: "r", Revision: 3}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if commits, pending := counts(s); commits != before+2 || pending != 0 {
		t.Fatalf("a write after the flush: %d commits, %d values pending; want %d, 0", commits, pending, before+2)
	}
}

// The driver's stage call writes its state and record in one commit, and so does a
// bound check its claim and record.
func TestDefer_TheDriverCommitsOncePerCall(t *testing.T) {
	ctx := context.Background()
	s := openDir(t, t.TempDir(), Options{})
	catalog, err := engine.NewCatalog([]engine.CatalogAgent{{Namespace: "ns", Agent: "tools", Capabilities: []engine.Capability{{Name: "quote"}}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.New(nil, engine.WithCatalog(catalog))
	if err != nil {
		t.Fatal(err)
	}
	d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: p}}, States: s, Records: s})
	if err != nil {
		t.Fatal(err)
	}
	session, err := d.Open(ctx, "r", engine.Opening{Text: "quote ACME"})
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]any{"symbol": "ACME"}
	step := engine.RoutingStep{StepID: "step-1", Namespace: "ns", AgentName: "tools", Metadata: map[string]any{"capability": "quote", "parameters": params}}
	before, _ := counts(s)
	if _, err := session.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{step}}, 0); err != nil {
		t.Fatal(err)
	}
	if commits, _ := counts(s); commits != before+1 {
		t.Fatalf("after_planning made %d commits, want 1", commits-before)
	}
	res, err := d.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-1", Namespace: "ns", AgentName: "tools", Capability: "quote", Parameters: params})
	if err != nil || !res.Allowed {
		t.Fatalf("check = %+v, %v", res, err)
	}
	if commits, _ := counts(s); commits != before+2 {
		t.Fatalf("the bound check made %d commits, want 1", commits-before-1)
	}
	st, ok, err := s.GetRequest(ctx, "r")
	if err != nil || !ok || st.Runs["step-1"] == nil || st.Runs["step-1"].Status != engine.RunStarted {
		t.Fatalf("state after the check = %+v, %v, %v", st, ok, err)
	}
}

// A state written whole, before a state's runs were kept apart, is read as it was and
// takes a claim (PutRun) like any other.
func TestStore_StateWrittenWholeIsRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	whole := []byte(`{"id":"r","generation":"g","request":"buy","opened_at":"2026-01-02T03:04:05Z","runs":{"step-0":{"status":"succeeded","attempts":1}},"revision":4}`)
	err := s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketLog).Put(stampKey(1<<40), encodeValue(value{kind: kindState, key: "r", revision: 4}, whole))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir, Options{})
	st, ok, err := s.GetRequest(ctx, "r")
	if err != nil || !ok || st.Request != "buy" || st.Revision != 4 || st.Runs["step-0"] == nil {
		t.Fatalf("GetRequest = %+v, %v, %v", st, ok, err)
	}
	runs := map[string]*engine.StepRun{"step-0": st.Runs["step-0"], "step-1": {Status: engine.RunStarted, Attempts: 1}}
	if err := s.PutRun(ctx, "r", 5, "step-1", runs, time.Minute); err != nil {
		t.Fatal(err)
	}
	st, ok, err = s.GetRequest(ctx, "r")
	if err != nil || !ok || st.Request != "buy" || st.Revision != 5 || len(st.Runs) != 2 || st.Runs["step-1"].Status != engine.RunStarted {
		t.Fatalf("GetRequest after PutRun = %+v, %v, %v", st, ok, err)
	}
}

// Many writers at once, some deferring, with the sweep committing deletions beside
// them: every write returns, each once it is committed, and none is lost.
func TestStore_ConcurrentWritersAllReturn(t *testing.T) {
	ctx := context.Background()
	s := openDir(t, t.TempDir(), Options{SweepEvery: time.Millisecond})
	const writers, writes = 32, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				id := fmt.Sprintf("r-%d-%d", w, i)
				wctx, flush := ctx, func() error { return nil }
				if i%2 == 0 {
					wctx, flush = s.Defer(ctx)
				}
				err := s.PutRequest(wctx, &engine.RequestState{ID: id, Revision: 1}, time.Minute)
				if err == nil {
					err = s.Put(wctx, record(id, 1, engine.RecordRunning, time.Now()))
				}
				if err == nil {
					err = s.PutCache(ctx, id, store.CacheEntry{Response: "x"}, time.Millisecond)
				}
				if ferr := flush(); err == nil {
					err = ferr
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("writers still waiting after a minute")
	}
	if _, pending := counts(s); pending != 0 {
		t.Fatalf("%d values pending after every write returned", pending)
	}
	if n := len(keys(t, s, kindRecord)); n != writers*writes {
		t.Fatalf("%d records in the file, want %d", n, writers*writes)
	}
}

// A writer that finds the committer held by another than a commit (the checkpointer
// taking the retired journal, drain) runs its commit once the holder releases it; it
// does not wait for a commit no one runs. (With the checkpointer releasing it without
// ending the turn, two writers of a busy store could each wait for the other.)
func TestStore_WriterGoesOnOnceTheCommitterIsReleased(t *testing.T) {
	s := openDir(t, t.TempDir(), Options{})
	s.committing.Lock()
	done := make(chan error, 1)
	go func() {
		done <- s.PutRequest(context.Background(), &engine.RequestState{ID: "r-1", Revision: 1}, time.Minute)
	}()
	for queued := false; !queued; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		queued = len(s.next.writes) > 0
		s.mu.Unlock()
	}
	time.Sleep(20 * time.Millisecond) // the writer finds the committer held and waits for its turn
	s.release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writer still waits for a commit no one runs")
	}
}

// A record written lately is read back from memory as a copy (engine.CopyRecord:
// changing what Get returned changes nothing stored; metadata values are read-only); one written recentRecords writes before is read
// from the file, the same.
func TestStore_RecentRecordsAreCopiedOthersDecoded(t *testing.T) {
	ctx := context.Background()
	s := openDir(t, t.TempDir(), Options{})
	at := time.Now().UTC().Truncate(time.Millisecond)
	first := record("r-first", 1, engine.RecordRunning, at)
	first.Metadata = map[string]any{"tenant": "acme"}
	if err := s.Put(ctx, first); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "r-first")
	if err != nil || got == first || got.Metadata["tenant"] != "acme" {
		t.Fatalf("Get of a recent record = %p (put %p), %v", got, first, err)
	}
	got.FinalResponse = "changed"
	got.Operations = append(got.Operations, engine.OperationRecord{DecisionID: "d"})
	if again, _ := s.Get(ctx, "r-first"); again.FinalResponse != "hi" || len(again.Operations) != 0 {
		t.Fatalf("a change to what Get returned reached the store: %+v", again)
	}
	for i := range recentRecords {
		if err := s.Put(ctx, record(fmt.Sprint("r-", i), 1, engine.RecordRunning, at)); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	_, cached := s.recent["r-first"]
	n := len(s.recent)
	s.mu.Unlock()
	if cached || n != recentRecords {
		t.Fatalf("r-first still among the recent records: %v; %d kept, want %d", cached, n, recentRecords)
	}
	got, err = s.Get(ctx, "r-first")
	if err != nil || got.RequestID != "r-first" || got.Revision != 1 || got.Metadata["tenant"] != "acme" || !got.CreatedAt.Equal(at) {
		t.Fatalf("Get of a record read from the file = %+v, %v", got, err)
	}
}
