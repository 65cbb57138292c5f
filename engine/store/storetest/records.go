package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// Records checks the engine.RecordStore contract against stores made by newStore; each
// subtest gets a fresh store.
func Records(t *testing.T, newStore func(t *testing.T) engine.RecordStore) {
	t.Run("GetMissingIsNotFound", func(t *testing.T) {
		_, err := newStore(t).Get(context.Background(), "nope")
		if !errors.Is(err, engine.ErrRecordNotFound) {
			t.Fatalf("Get missing: err = %v, want ErrRecordNotFound", err)
		}
	})
	t.Run("PutThenGetRoundTrips", func(t *testing.T) {
		s := newStore(t)
		rec := sample("req-1", 1)
		if err := s.Put(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(context.Background(), "req-1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != 1 || got.Status != engine.RecordSucceeded || len(got.PipelineHooks) != 1 ||
			got.PipelineHooks[0].Decision == nil || got.FinalResponse != "hello" {
			t.Fatalf("round trip lost data: %+v", got)
		}
	})
	t.Run("StaleRevisionNeverReplacesNewer", func(t *testing.T) {
		s := newStore(t)
		ctx := context.Background()
		if err := s.Put(ctx, sample("req-1", 5)); err != nil {
			t.Fatal(err)
		}
		for _, rev := range []int64{5, 4, 1} {
			old := sample("req-1", rev)
			old.FinalResponse = "stale"
			if err := s.Put(ctx, old); !errors.Is(err, engine.ErrStaleRevision) {
				t.Fatalf("Put revision %d over 5: err = %v, want ErrStaleRevision", rev, err)
			}
		}
		got, _ := s.Get(ctx, "req-1")
		if got.Revision != 5 || got.FinalResponse != "hello" {
			t.Fatalf("stale write replaced record: %+v", got)
		}
	})
	t.Run("GetReturnsACopy", func(t *testing.T) {
		// Put takes its record (the caller leaves it alone); what Get returns is the
		// caller's to change: fields, entries, appends.
		s := newStore(t)
		if err := s.Put(context.Background(), sample("req-1", 1)); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Get(context.Background(), "req-1")
		got.FinalResponse = "mutated"
		got.PipelineHooks[0].HookName = "mutated"
		got.PipelineHooks = append(got.PipelineHooks, engine.Invocation{HookName: "appended"})
		again, _ := s.Get(context.Background(), "req-1")
		if again.FinalResponse != "hello" || again.PipelineHooks[0].HookName != "h" || len(again.PipelineHooks) != 1 {
			t.Fatalf("a change to what Get returned reached the store: %+v", again)
		}
	})
	t.Run("ConcurrentRewritesKeepHighestRevision", func(t *testing.T) {
		s := newStore(t)
		var wg sync.WaitGroup
		for rev := int64(1); rev <= 50; rev++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec := sample("req-1", rev)
				rec.FinalResponse = fmt.Sprint(rev)
				if err := s.Put(context.Background(), rec); err != nil && !errors.Is(err, engine.ErrStaleRevision) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		got, err := s.Get(context.Background(), "req-1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != 50 || got.FinalResponse != "50" {
			t.Fatalf("after concurrent rewrites: revision %d response %q, want 50", got.Revision, got.FinalResponse)
		}
	})
	t.Run("TooLargeRecordIsRefused", func(t *testing.T) {
		s := newStore(t)
		rec := sample("req-big", 1)
		rec.FinalResponse = strings.Repeat("x", store.DefaultMaxRecordBytes+1)
		if err := s.Put(context.Background(), rec); !errors.Is(err, engine.ErrTooLarge) {
			t.Fatalf("put of a record over the limit: err = %v, want ErrTooLarge", err)
		}
		if _, err := s.Get(context.Background(), "req-big"); !errors.Is(err, engine.ErrRecordNotFound) {
			t.Fatalf("the refused record was stored: %v", err)
		}
	})
	t.Run("CanceledContextIsAnError", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := newStore(t).Put(ctx, sample("req-1", 1)); err == nil {
			t.Fatal("Put with a canceled context succeeded")
		}
	})
	t.Run("AppendOperation", func(t *testing.T) {
		s, ok := newStore(t).(engine.OperationStore)
		if !ok {
			t.Skip("the store does not implement engine.OperationStore")
		}
		appends(t, s.(engine.RecordStore), s)
	})
}

// appends checks the engine.OperationStore contract on s, rs being the same store: an
// append is the next revision with the rest of the record kept, refused without a
// record or past a bound, never written into what Put's caller gave or Get's got, and
// never lost among concurrent appends and Gets.
func appends(t *testing.T, rs engine.RecordStore, s engine.OperationStore) {
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	check := func(step string) engine.OperationRecord {
		return engine.OperationRecord{DecisionID: "d-" + step, Operation: "tool_call", StepID: step, Outcome: engine.CheckAllow, Generation: "gen-1", StartedAt: at}
	}
	if err := s.AppendOperation(ctx, "req-none", check("step-1"), at, 100); !errors.Is(err, engine.ErrRecordNotFound) {
		t.Fatalf("append to no record: err = %v, want ErrRecordNotFound", err)
	}
	if _, err := rs.Get(ctx, "req-none"); !errors.Is(err, engine.ErrRecordNotFound) {
		t.Fatalf("an append to no record made one: %v", err)
	}

	// Put's caller's array has room past its length: an append must not write there.
	rec := sample("req-1", 1)
	rec.Operations = make([]engine.OperationRecord, 1, 4)
	rec.Operations[0] = check("step-0")
	given := rec.Operations[:cap(rec.Operations)]
	if err := rs.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendOperation(ctx, "req-1", check("step-1"), at, 100); err != nil {
		t.Fatal(err)
	}
	if given[1].StepID != "" {
		t.Fatalf("the append wrote into the array Put was given: %+v", given[1])
	}
	got, err := rs.Get(ctx, "req-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 2 || !got.UpdatedAt.Equal(at) || got.FinalResponse != "hello" || len(got.PipelineHooks) != 1 ||
		len(got.Operations) != 2 || got.Operations[0].StepID != "step-0" || got.Operations[1].StepID != "step-1" || got.Operations[1].DecisionID != "d-step-1" {
		t.Fatalf("record after an append = %+v", got)
	}
	if err := rs.Put(ctx, sample("req-1", 2)); !errors.Is(err, engine.ErrStaleRevision) {
		t.Fatalf("Put of the revision an append took: err = %v, want ErrStaleRevision", err)
	}

	// What Get returned is the caller's: its changes and appends reach neither the
	// store nor a later append.
	got.Operations[0].StepID = "mutated"
	got.Operations = append(got.Operations, check("step-x"))
	if err := s.AppendOperation(ctx, "req-1", check("step-2"), at, 100); err != nil {
		t.Fatal(err)
	}
	if got.Operations[2].StepID != "step-x" {
		t.Fatalf("an append wrote into what Get returned: %+v", got.Operations[2])
	}
	again, _ := rs.Get(ctx, "req-1")
	if again.Revision != 3 || len(again.Operations) != 3 || again.Operations[0].StepID != "step-0" || again.Operations[2].StepID != "step-2" {
		t.Fatalf("record after a change to a copy and an append = %+v", again)
	}

	// Bounds: entries (one hook and three operations are four) and bytes.
	if err := s.AppendOperation(ctx, "req-1", check("step-3"), at, 4); !errors.Is(err, engine.ErrTooLarge) {
		t.Fatalf("append past 4 entries: err = %v, want ErrTooLarge", err)
	}
	big := check("step-3")
	big.Reason = strings.Repeat("x", store.DefaultMaxRecordBytes+1)
	if err := s.AppendOperation(ctx, "req-1", big, at, 100); !errors.Is(err, engine.ErrTooLarge) {
		t.Fatalf("append of an operation over the byte limit: err = %v, want ErrTooLarge", err)
	}
	if again, _ := rs.Get(ctx, "req-1"); again.Revision != 3 || len(again.Operations) != 3 {
		t.Fatalf("a refused append changed the record: revision %d, %d operations", again.Revision, len(again.Operations))
	}

	// Concurrent appends, with readers copying meanwhile: none is lost.
	const writers = 24
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := s.AppendOperation(ctx, "req-1", check(fmt.Sprint("c-", i)), at, 1000); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if r, err := rs.Get(ctx, "req-1"); err != nil || len(r.Operations) < 3 {
				t.Errorf("Get during appends: %v", err)
			}
		}()
	}
	wg.Wait()
	final, _ := rs.Get(ctx, "req-1")
	seen := map[string]bool{}
	for _, o := range final.Operations[3:] {
		seen[o.StepID] = true
	}
	if final.Revision != 3+writers || len(final.Operations) != 3+writers || len(seen) != writers {
		t.Fatalf("after %d concurrent appends: revision %d, %d operations, %d distinct", writers, final.Revision, len(final.Operations), len(seen))
	}
}

func sample(id string, revision int64) *engine.ExecutionRecord {
	now := time.Now().UTC()
	return &engine.ExecutionRecord{
		RequestID: id, Generation: "gen-1", Status: engine.RecordSucceeded, Revision: revision,
		PipelineHooks: []engine.Invocation{{
			HookName: "h", Phase: engine.StageBeforePlanning, Status: engine.InvocationSucceeded, Sequence: 1,
			StartedAt: now, Decision: &engine.DecisionRecord{FailurePolicy: engine.FailOpen, Action: engine.ActionContinue, Reason: engine.ReasonNoDecision},
		}},
		FinalResponse: "hello", FinalResponseSource: engine.SourceAfterSynthesis,
		CreatedAt: now, UpdatedAt: now,
	}
}
