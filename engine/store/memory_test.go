package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

func TestMemory_CacheIsBounded(t *testing.T) {
	m := NewMemory(MemoryOptions{MaxEntries: 3})
	ctx := context.Background()
	for i := range 10 {
		if err := m.PutCache(ctx, fmt.Sprint(i), CacheEntry{Response: "x"}, time.Duration(i+1)*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.cache.Len(); n != 3 {
		t.Fatalf("cache holds %d entries, want 3", n)
	}
	if _, ok, _ := m.GetCache(ctx, "9"); !ok {
		t.Fatal("newest entry evicted")
	}
}

// Request states and records are bounded by their bytes, not only their count: many
// requests with large metadata evict the oldest instead of growing the process.
func TestHardening_MemoryStoreIsBoundedByBytes(t *testing.T) {
	m := NewMemory(MemoryOptions{MaxBytes: 2 << 20})
	ctx := context.Background()
	blob := strings.Repeat("x", 200<<10)
	for i := range 40 {
		st := &engine.RequestState{ID: fmt.Sprint("r", i), Revision: 1, Metadata: map[string]any{"blob": blob}}
		if err := m.PutRequest(ctx, st, time.Minute); err != nil {
			t.Fatal(err)
		}
		rec := &engine.ExecutionRecord{RequestID: st.ID, Revision: 1, FinalResponse: blob}
		if err := m.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if b := m.requests.Bytes(); b > 1<<20 {
		t.Fatalf("request states hold %d bytes, over half the budget", b)
	}
	if b := m.records.Bytes(); b > 1<<20 {
		t.Fatalf("records hold %d bytes, over half the budget", b)
	}
	if _, ok, _ := m.GetRequest(ctx, "r39"); !ok {
		t.Fatal("the newest state was evicted")
	}
}

// Rate-limit windows are bounded: unique keys cannot grow the limiter without bound.
func TestHardening_RateLimitWindowsAreBounded(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	ctx := context.Background()
	for i := range maxWindows + 500 {
		if _, err := m.Allow(ctx, fmt.Sprint("k", i), 1, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.windows.Len(); n > maxWindows {
		t.Fatalf("%d windows kept, over %d", n, maxWindows)
	}
}

// PutRun stores a run as the next revision, revision-gated like PutRequest, keeps the
// rest of the state and keeps the state's size exact (as if it had been written whole).
func TestMemory_PutRunIsTheNextRevision(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(MemoryOptions{})
	st := &engine.RequestState{ID: "r", Generation: "g", Metadata: map[string]any{"tenant": "acme"}, Revision: 1,
		PriorSteps: []engine.RoutingStep{{StepID: "step-1"}}, Runs: map[string]*engine.StepRun{"step-0": {Status: engine.RunSucceeded, Response: "x"}}}
	if err := m.PutRequest(ctx, st, 0); err != nil {
		t.Fatal(err)
	}
	runs := func(step1 engine.StepRun) map[string]*engine.StepRun {
		return map[string]*engine.StepRun{"step-0": st.Runs["step-0"], "step-1": &step1}
	}
	for _, stale := range []int64{1, 3} {
		if err := m.PutRun(ctx, "r", stale, "step-1", runs(engine.StepRun{Status: engine.RunStarted}), 0); !errors.Is(err, engine.ErrStaleRevision) {
			t.Errorf("revision %d: %v, want ErrStaleRevision", stale, err)
		}
	}
	if err := m.PutRun(ctx, "nobody", 2, "step-1", runs(engine.StepRun{}), 0); !errors.Is(err, engine.ErrStaleRevision) {
		t.Errorf("an unknown request: %v, want ErrStaleRevision", err)
	}
	if err := m.PutRun(ctx, "r", 2, "step-1", runs(engine.StepRun{Status: engine.RunStarted, Attempts: 1}), 0); err != nil {
		t.Fatal(err)
	}
	got, ok, err := m.GetRequest(ctx, "r")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := *st
	want.Revision, want.Runs = 2, map[string]*engine.StepRun{"step-0": st.Runs["step-0"], "step-1": {Status: engine.RunStarted, Attempts: 1}}
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("state after PutRun:\n got  %+v\n want %+v", got, &want)
	}
	e, _ := m.requests.Get("r", time.Now())
	if whole := stateSize(got, stepsSize(got.PriorSteps, nil, 0)); e.size != whole || m.requests.Bytes() != whole {
		t.Errorf("size %d (map %d), want %d as written whole", e.size, m.requests.Bytes(), whole)
	}
	if err := m.PutRequest(ctx, st, 0); !errors.Is(err, engine.ErrStaleRevision) {
		t.Errorf("a write of the revision PutRun replaced: %v, want ErrStaleRevision", err)
	}
}

// An appended operation leaves the record's summary, size and map as a Put of the whole
// record would: List finds what it added, a failed record stays among the failed.
func TestMemory_AppendOperationIsAWholeWrite(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(MemoryOptions{})
	now := time.Now().UTC()
	for _, status := range []engine.RecordStatus{engine.RecordRunning, engine.RecordFailed} {
		id := "r-" + string(status)
		rec := &engine.ExecutionRecord{RequestID: id, Generation: "g", Status: status, Revision: 1, CreatedAt: now, UpdatedAt: now,
			PipelineHooks: []engine.Invocation{{HookName: "h", Phase: engine.StageAfterPlanning}},
			Operations:    []engine.OperationRecord{{StepID: "s0", Outcome: engine.CheckDeny, Code: "first", PolicyRevision: "r1"}}}
		if err := m.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
		for i, o := range []engine.OperationRecord{
			{StepID: "s1", Outcome: engine.CheckAllow, WouldDeny: []engine.Finding{{Rule: "w", Code: "warned", Violations: []engine.Violation{{Code: "v1"}}}}},
			{StepID: "s2", Outcome: engine.CheckGuardError, Reason: "broken", PolicyRevision: "r2"},
			{StepID: "s3", Outcome: engine.CheckDeny, Code: "first", Finish: &engine.FinishRecord{Status: engine.RunFailed, Error: "boom", Response: map[string]any{"k": "v"}}},
		} {
			if err := m.AppendOperation(ctx, id, o, now.Add(time.Duration(i+1)*time.Second), 100); err != nil {
				t.Fatal(err)
			}
		}
		m.recordsMu.Lock()
		e, _ := m.record(id, time.Now())
		_, inFailed := m.failed.Get(id, time.Now())
		m.recordsMu.Unlock()
		if got := e.rec; got.Revision != 4 || len(got.Operations) != 4 || !got.UpdatedAt.Equal(now.Add(3*time.Second)) {
			t.Fatalf("%s: record after three appends = %+v", status, got)
		}
		if want := Summarize(e.rec); !reflect.DeepEqual(e.summary, want) {
			t.Errorf("%s: summary after appends\n got  %+v\n want %+v", status, e.summary, want)
		}
		if want := recordSize(e.rec); e.size != want {
			t.Errorf("%s: size %d, want %d as written whole", status, e.size, want)
		}
		if inFailed != (status == engine.RecordFailed) {
			t.Errorf("%s: among the failed records: %v", status, inFailed)
		}
		page, err := m.List(ctx, Query{Violation: "v1"})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(page.Records); n != 1 && status == engine.RecordRunning || n != 2 && status == engine.RecordFailed {
			t.Errorf("%s: List by an appended violation found %d records", status, n)
		}
	}
}
