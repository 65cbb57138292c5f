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
