// Package storetest holds the conformance suites of agentd's store interfaces, one per
// interface: States (engine.StateStore and engine.RunStore), Records
// (engine.RecordStore), Cache and Limiter. Every implementation passes each suite of the interfaces it implements.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// States checks the engine.StateStore and engine.RunStore contracts (every store
// implements both) against stores made by newStore; each subtest gets a fresh store
// with no keys in common with other subtests.
func States(t *testing.T, newStore func(t *testing.T) engine.StateStore) {
	ctx := context.Background()
	t.Run("RequestStateRoundTripsAndIsCopied", func(t *testing.T) {
		s := newStore(t)
		if _, ok, err := s.GetRequest(ctx, "req-1"); ok || err != nil {
			t.Fatalf("GetRequest(unknown) = ok %v, err %v", ok, err)
		}
		in := &engine.RequestState{ID: "req-1", Generation: "g-1", Request: "hi",
			Metadata: map[string]any{"tenant": "acme"}, Enrichments: map[string]any{"rag_context": "x"},
			CacheVary: map[string]string{"locale": "en"}, PriorSteps: []engine.RoutingStep{{StepID: "step-1"}}, Phase: 1,
			Held: []string{"step-1"}}
		if err := s.PutRequest(ctx, in, time.Minute); err != nil {
			t.Fatal(err)
		}
		in.Metadata["tenant"] = "mutated"
		got, ok, err := s.GetRequest(ctx, "req-1")
		if err != nil || !ok || got.Generation != "g-1" || got.Metadata["tenant"] != "acme" || got.Enrichments["rag_context"] != "x" ||
			got.CacheVary["locale"] != "en" || len(got.PriorSteps) != 1 || got.Phase != 1 || len(got.Held) != 1 || got.Held[0] != "step-1" {
			t.Fatalf("GetRequest = %+v, %v, %v", got, ok, err)
		}
		// a held round's hold entry (engine.Session.HoldRound)
		if err := s.PutRequest(ctx, &engine.RequestState{ID: "held-k", HoldOf: "req-1", Revision: 1}, time.Minute); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := s.GetRequest(ctx, "held-k"); err != nil || !ok || got.HoldOf != "req-1" {
			t.Fatalf("GetRequest(hold entry) = %+v, %v, %v", got, ok, err)
		}
	})
	t.Run("InformationFlowRoundTrips", func(t *testing.T) { flowRoundTrips(t, newStore(t)) })
	t.Run("StaleStateRevisionNeverReplacesNewer", func(t *testing.T) {
		s := newStore(t)
		put := func(rev int64, text string) error {
			return s.PutRequest(ctx, &engine.RequestState{ID: "req-1", Request: text, Revision: rev}, time.Minute)
		}
		if err := put(2, "two"); err != nil {
			t.Fatal(err)
		}
		for _, rev := range []int64{1, 2} {
			if err := put(rev, "stale"); !errors.Is(err, engine.ErrStaleRevision) {
				t.Fatalf("put revision %d over 2: err = %v, want ErrStaleRevision", rev, err)
			}
		}
		if got, _, _ := s.GetRequest(ctx, "req-1"); got == nil || got.Request != "two" || got.Revision != 2 {
			t.Fatalf("state after stale writes = %+v", got)
		}
		if err := put(3, "three"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("TooLargeStateIsRefused", func(t *testing.T) {
		s := newStore(t)
		big := &engine.RequestState{ID: "req-big", Revision: 1, Metadata: map[string]any{"blob": strings.Repeat("x", store.DefaultMaxStateBytes+1)}}
		if err := s.PutRequest(ctx, big, time.Minute); !errors.Is(err, engine.ErrTooLarge) {
			t.Fatalf("put of a state over the limit: err = %v, want ErrTooLarge", err)
		}
		if _, ok, _ := s.GetRequest(ctx, "req-big"); ok {
			t.Fatal("the refused state was stored")
		}
	})
	t.Run("ConcurrentWritersOfOneRevisionOneWins", func(t *testing.T) {
		s := newStore(t)
		if err := s.PutRequest(ctx, &engine.RequestState{ID: "req-1", Revision: 1}, time.Minute); err != nil {
			t.Fatal(err)
		}
		const writers = 16
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.PutRequest(ctx, &engine.RequestState{ID: "req-1", Request: fmt.Sprint(i), Revision: 2}, time.Minute)
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, engine.ErrStaleRevision):
					t.Errorf("writer %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("%d writers of revision 2 won, want exactly 1", n)
		}
	})
	t.Run("RunIsTheNextRevision", func(t *testing.T) { runs(t, newStore(t)) })
}

// runs checks the engine.RunStore contract on s, which must implement it: a run is
// stored as the next revision, revision-gated (stale, ahead or unknown: nothing
// changes), the rest of the state is kept, and of concurrent claims of one revision
// exactly one wins.
func runs(t *testing.T, s engine.StateStore) {
	ctx := context.Background()
	rs, ok := s.(engine.RunStore)
	if !ok {
		t.Fatalf("%T does not implement engine.RunStore", s)
	}
	st := &engine.RequestState{ID: "req-1", Generation: "g", Request: "hi", Metadata: map[string]any{"tenant": "acme"}, Revision: 1,
		PriorSteps: []engine.RoutingStep{{StepID: "step-1"}, {StepID: "step-2"}},
		Runs:       map[string]*engine.StepRun{"step-0": {Status: engine.RunSucceeded, Attempts: 1, Response: "x"}}}
	if err := s.PutRequest(ctx, st, time.Minute); err != nil {
		t.Fatal(err)
	}
	with := func(step string, run engine.StepRun) map[string]*engine.StepRun {
		return map[string]*engine.StepRun{"step-0": st.Runs["step-0"], step: &run}
	}
	for _, tc := range []struct {
		name     string
		id       string
		revision int64
	}{{"the stored revision", "req-1", 1}, {"a revision ahead", "req-1", 3}, {"an unknown request", "req-unknown", 2}} {
		if err := rs.PutRun(ctx, tc.id, tc.revision, "step-1", with("step-1", engine.StepRun{Status: engine.RunStarted}), time.Minute); !errors.Is(err, engine.ErrStaleRevision) {
			t.Errorf("PutRun of %s: err = %v, want ErrStaleRevision", tc.name, err)
		}
	}
	if err := rs.PutRun(ctx, "req-1", 2, "step-1", with("step-1", engine.StepRun{Status: engine.RunStarted, Attempts: 1, Labels: []string{"pii"}}), time.Minute); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.GetRequest(ctx, "req-1")
	if err != nil || !ok {
		t.Fatalf("GetRequest after PutRun = ok %v, err %v", ok, err)
	}
	if got.Revision != 2 || got.Generation != "g" || got.Request != "hi" || got.Metadata["tenant"] != "acme" || len(got.PriorSteps) != 2 ||
		len(got.Runs) != 2 || got.Runs["step-0"].Response != "x" || !reflect.DeepEqual(*got.Runs["step-1"], engine.StepRun{Status: engine.RunStarted, Attempts: 1, Labels: []string{"pii"}}) {
		t.Fatalf("state after PutRun = %+v (runs %v)", got, got.Runs)
	}
	if err := s.PutRequest(ctx, st, time.Minute); !errors.Is(err, engine.ErrStaleRevision) {
		t.Errorf("a write of the revision PutRun replaced: err = %v, want ErrStaleRevision", err)
	}
	const claims = 16
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := rs.PutRun(ctx, "req-1", 3, "step-2", with("step-2", engine.StepRun{Status: engine.RunStarted, Attempts: i + 1}), time.Minute)
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, engine.ErrStaleRevision):
				t.Errorf("claim %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d concurrent claims of revision 3 won, want exactly 1", n)
	}
	if got, _, _ := s.GetRequest(ctx, "req-1"); got == nil || got.Revision != 3 || got.Runs["step-2"] == nil || got.Runs["step-1"] != nil {
		t.Fatalf("state after the claims = %+v", got)
	}
}

// Cache checks the store.Cache contract against stores made by newStore.
func Cache(t *testing.T, newStore func(t *testing.T) store.Cache) {
	ctx := context.Background()
	t.Run("CacheMissIsNotAnError", func(t *testing.T) {
		_, ok, err := newStore(t).GetCache(ctx, "missing")
		if ok || err != nil {
			t.Fatalf("GetCache(missing) = ok %v, err %v", ok, err)
		}
	})
	t.Run("CacheRoundTripsVariationMap", func(t *testing.T) {
		s := newStore(t)
		in := store.CacheEntry{Response: "42", Source: "cache", CachedAgainst: map[string]string{"tenant": "acme"}, StoredAt: time.Now().UTC().Truncate(time.Millisecond)}
		if err := s.PutCache(ctx, "k", in, time.Minute); err != nil {
			t.Fatal(err)
		}
		in.CachedAgainst["tenant"] = "mutated"
		got, ok, err := s.GetCache(ctx, "k")
		if err != nil || !ok || got.Response != "42" || got.Source != "cache" || got.CachedAgainst["tenant"] != "acme" || !got.StoredAt.Equal(in.StoredAt) {
			t.Fatalf("GetCache = %+v, %v, %v", got, ok, err)
		}
	})
	t.Run("CacheEntryExpires", func(t *testing.T) {
		s := newStore(t)
		if err := s.PutCache(ctx, "k", store.CacheEntry{Response: "x"}, 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, ok, _ := s.GetCache(ctx, "k"); !ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("cache entry never expired")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// Limiter checks the store.Limiter contract against stores made by newStore.
func Limiter(t *testing.T, newStore func(t *testing.T) store.Limiter) {
	ctx := context.Background()
	t.Run("LimiterHoldsUnderConcurrency", func(t *testing.T) {
		s := newStore(t)
		var allowed atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 40; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.Allow(ctx, "tenant-a", 10, time.Hour)
				if err != nil {
					t.Error(err)
				}
				if ok {
					allowed.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := allowed.Load(); n != 10 {
			t.Fatalf("allowed %d of 40 with limit 10", n)
		}
		if ok, _ := s.Allow(ctx, "tenant-b", 10, time.Hour); !ok {
			t.Fatal("a different key shares the first key's window")
		}
	})
	t.Run("LimiterWindowResets", func(t *testing.T) {
		s := newStore(t)
		key := fmt.Sprintf("reset-%d", time.Now().UnixNano())
		if ok, _ := s.Allow(ctx, key, 1, 30*time.Millisecond); !ok {
			t.Fatal("first event refused")
		}
		if ok, _ := s.Allow(ctx, key, 1, 30*time.Millisecond); ok {
			t.Fatal("second event within the window allowed")
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			time.Sleep(15 * time.Millisecond)
			if ok, _ := s.Allow(ctx, key, 1, 30*time.Millisecond); ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("window never reset")
			}
		}
	})
}
