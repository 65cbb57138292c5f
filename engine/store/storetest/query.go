package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// Query checks the store.RecordLister contract against stores made by newStore (which
// keep records until deleted); each subtest gets a fresh store.
func Query(t *testing.T, newStore func(t *testing.T) store.QueryableRecords) {
	ctx := context.Background()
	t.Run("EmptyStoreListsNothing", func(t *testing.T) {
		page, err := newStore(t).List(ctx, store.Query{})
		if err != nil || page.Records == nil || len(page.Records) != 0 || page.NextCursor != "" {
			t.Fatalf("List on an empty store = %+v, %v; want no records (an empty list) and no cursor", page, err)
		}
	})
	t.Run("NewestFirstThenByRequestID", func(t *testing.T) {
		s := newStore(t)
		base := time.Now().UTC().Truncate(time.Second)
		for _, r := range []struct {
			id string
			at time.Duration
		}{{"b", 0}, {"a", 0}, {"c", time.Millisecond}, {"old", -time.Hour}, {"same-ms", 400 * time.Microsecond}} {
			put(t, s, &engine.ExecutionRecord{RequestID: r.id, Status: engine.RecordRunning, Revision: 1, UpdatedAt: base.Add(r.at)})
		}
		// same-ms was written 0.4 ms after a and b: within their millisecond, it sorts
		// by id.
		if got, want := listAll(t, s, store.Query{}, 0), []string{"c", "a", "b", "same-ms", "old"}; !slices.Equal(got, want) {
			t.Fatalf("order = %v, want %v", got, want)
		}
	})
	t.Run("CursorPagesThroughEveryRecordOnce", func(t *testing.T) {
		s := newStore(t)
		base := time.Now().UTC().Truncate(time.Second)
		var want []string
		for i := range 23 {
			id := fmt.Sprintf("req-%02d", i)
			// Every third record shares its millisecond with the one before.
			put(t, s, &engine.ExecutionRecord{RequestID: id, Status: engine.RecordSucceeded, Revision: 1,
				UpdatedAt: base.Add(-time.Duration(i-i/3) * time.Millisecond)})
		}
		want = listAll(t, s, store.Query{Limit: store.MaxLimit}, 0)
		if len(want) != 23 {
			t.Fatalf("one page of %d lists %d records", store.MaxLimit, len(want))
		}
		for _, limit := range []int{1, 5, 22, 23} {
			if got := listAll(t, s, store.Query{}, limit); !slices.Equal(got, want) {
				t.Errorf("paging by %d lists %v, want %v", limit, got, want)
			}
		}
	})
	t.Run("FiltersSelectTheirRecords", func(t *testing.T) {
		s := newStore(t)
		now := time.Now().UTC().Truncate(time.Millisecond)
		for _, rec := range fixture(now) {
			put(t, s, rec)
		}
		for _, c := range []struct {
			name string
			q    store.Query
			want []string
		}{
			{"all", store.Query{}, []string{"quote-1", "trade-1", "broker-1", "bad-plan", "stale", "cached"}},
			{"status", store.Query{Status: engine.RecordFailed}, []string{"trade-1"}},
			{"lifecycle", store.Query{Lifecycle: engine.LifecycleCompleted}, []string{"quote-1", "cached"}},
			{"lifecycle abandoned", store.Query{Lifecycle: engine.LifecycleAbandoned}, []string{"stale"}},
			{"lifecycle open", store.Query{Lifecycle: engine.LifecycleOpen}, []string{"broker-1", "bad-plan"}},
			{"stage", store.Query{Stage: engine.StageAfterPlanning}, []string{"quote-1", "trade-1", "broker-1"}},
			{"stage never reached", store.Query{Stage: engine.StageAfterExecution}, nil},
			{"hook", store.Query{Hook: "allowed-operations"}, []string{"quote-1", "trade-1", "broker-1"}},
			{"reason", store.Query{Reason: engine.ReasonHookError}, []string{"trade-1"}},
			{"violation of a policy", store.Query{Violation: "capability_not_allowed"}, []string{"trade-1"}},
			{"violation of a plan rule", store.Query{Violation: "unknown_agent"}, []string{"bad-plan"}},
			{"violation of a guard", store.Query{Violation: "trade_limit"}, []string{"broker-1"}},
			{"would-deny finding of a policy", store.Query{Violation: "external_email"}, []string{"quote-1"}},
			{"would-deny finding of a guard", store.Query{Violation: "tier_limit"}, []string{"quote-1"}},
			{"guard outcome", store.Query{Guard: engine.CheckDeny}, []string{"broker-1"}},
			{"guard outcome allow", store.Query{Guard: engine.CheckAllow}, []string{"quote-1", "broker-1"}},
			{"generation", store.Query{Generation: "g-2"}, []string{"cached"}},
			{"tenant", store.Query{Tenant: "acme"}, []string{"quote-1", "trade-1"}},
			{"since", store.Query{Since: now.Add(-3 * time.Minute)}, []string{"quote-1", "trade-1", "broker-1"}},
			{"until", store.Query{Until: now.Add(-3 * time.Minute)}, []string{"bad-plan", "stale", "cached"}},
			{"since and until", store.Query{Since: now.Add(-4 * time.Minute), Until: now.Add(-time.Minute)}, []string{"trade-1", "broker-1", "bad-plan"}},
			{"id", store.Query{IDContains: "TRADE"}, []string{"trade-1"}},
			{"id part", store.Query{IDContains: "-1"}, []string{"quote-1", "trade-1", "broker-1"}},
			{"combined", store.Query{Stage: engine.StageAfterPlanning, Status: engine.RecordRunning}, []string{"broker-1"}},
			{"nothing", store.Query{Hook: "no-such-hook"}, nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				for _, limit := range []int{0, 1, 2} {
					if got := listAll(t, s, c.q, limit); !slices.Equal(got, c.want) {
						t.Errorf("limit %d: %v, want %v", limit, got, c.want)
					}
				}
			})
		}
	})
	t.Run("SummaryHoldsWhatTheListShows", func(t *testing.T) {
		s := newStore(t)
		now := time.Now().UTC().Truncate(time.Millisecond)
		for _, rec := range fixture(now) {
			put(t, s, rec)
		}
		page, err := s.List(ctx, store.Query{IDContains: "trade-1"})
		if err != nil || len(page.Records) != 1 {
			t.Fatalf("List = %+v, %v", page, err)
		}
		got := page.Records[0]
		want := store.Summary{
			RequestID: "trade-1", Request: "Buy 100 ACME <script>alert(1)</script>", Generation: "g-1", Tenant: "acme",
			Status: engine.RecordFailed, Lifecycle: engine.LifecycleFailed, Cause: engine.CausePolicyDenied,
			Error:  "required after-planning hook \"allowed-operations\" failed",
			Stages: []engine.Stage{engine.StageAfterPlanning, engine.StageBeforePlanning}, Hooks: []string{"allowed-operations", "tenant-context"},
			Reasons: []engine.Reason{engine.ReasonHookError, "no_decision"}, Violations: []string{"capability_not_allowed"}, Guards: []engine.CheckOutcome{},
			Invocations: 2, Rejections: 1, Revision: 3, CreatedAt: now.Add(-3 * time.Minute), UpdatedAt: now.Add(-2 * time.Minute),
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("summary\n got %+v\nwant %+v", got, want)
		}
		long := strings.Repeat("é", store.SummaryTextLen)
		put(t, s, &engine.ExecutionRecord{RequestID: "long", Request: long, Status: engine.RecordRunning, Revision: 1, UpdatedAt: now})
		page, err = s.List(ctx, store.Query{IDContains: "long"})
		if err != nil || len(page.Records) != 1 {
			t.Fatalf("List = %+v, %v", page, err)
		}
		if r := page.Records[0].Request; len(r) > store.SummaryTextLen+len("…") || !strings.HasPrefix(long, strings.TrimSuffix(r, "…")) || !strings.HasSuffix(r, "…") {
			t.Fatalf("a long request text is summarized as %q", r)
		}
	})
	t.Run("RewriteMovesTheRecordAndItsSummary", func(t *testing.T) {
		s := newStore(t)
		now := time.Now().UTC().Truncate(time.Millisecond)
		put(t, s, &engine.ExecutionRecord{RequestID: "r", Status: engine.RecordRunning, Revision: 1, UpdatedAt: now.Add(-time.Minute)})
		put(t, s, &engine.ExecutionRecord{RequestID: "other", Status: engine.RecordRunning, Revision: 1, UpdatedAt: now.Add(-time.Second)})
		put(t, s, &engine.ExecutionRecord{RequestID: "r", Status: engine.RecordSucceeded, Revision: 2, UpdatedAt: now})
		if got := listAll(t, s, store.Query{}, 0); !slices.Equal(got, []string{"r", "other"}) {
			t.Fatalf("after a rewrite the list is %v, want [r other]", got)
		}
		if got := listAll(t, s, store.Query{Status: engine.RecordRunning}, 0); !slices.Equal(got, []string{"other"}) {
			t.Fatalf("running records after r succeeded: %v", got)
		}
		// A stale write changes nothing.
		if err := s.Put(ctx, &engine.ExecutionRecord{RequestID: "r", Status: engine.RecordFailed, Revision: 2, UpdatedAt: now.Add(time.Second)}); !errors.Is(err, engine.ErrStaleRevision) {
			t.Fatalf("stale put: %v", err)
		}
		if got := listAll(t, s, store.Query{Status: engine.RecordFailed}, 0); len(got) != 0 {
			t.Fatalf("a stale write shows in the list: %v", got)
		}
	})
	t.Run("ListedSummariesAreCopies", func(t *testing.T) {
		s := newStore(t)
		put(t, s, &engine.ExecutionRecord{RequestID: "r", Status: engine.RecordRunning, Revision: 1, UpdatedAt: time.Now(),
			PipelineHooks: []engine.Invocation{{HookName: "h", Phase: engine.StageBeforePlanning}}})
		page, err := s.List(ctx, store.Query{})
		if err != nil || len(page.Records) != 1 {
			t.Fatalf("List = %+v, %v", page, err)
		}
		page.Records[0].Hooks[0] = "mutated"
		if got := listAll(t, s, store.Query{Hook: "h"}, 0); !slices.Equal(got, []string{"r"}) {
			t.Fatalf("changing a listed summary changed the store: %v", got)
		}
	})
	t.Run("InvalidQueriesNameTheirParameter", func(t *testing.T) {
		s := newStore(t)
		now := time.Now()
		for param, q := range map[string]store.Query{
			"status":     {Status: "done"},
			"lifecycle":  {Lifecycle: "gone"},
			"stage":      {Stage: "before_everything"},
			"guard":      {Guard: "maybe"},
			"limit":      {Limit: store.MaxLimit + 1},
			"until":      {Since: now, Until: now.Add(-time.Second)},
			"cursor":     {Cursor: "not a cursor"},
			"hook":       {Hook: strings.Repeat("h", 300)},
			"generation": {Generation: "\xff"},
		} {
			_, err := s.List(ctx, q)
			var qe *store.QueryError
			if !errors.As(err, &qe) || qe.Param != param {
				t.Errorf("query with a bad %s: err = %v, want a *QueryError naming %s", param, err, param)
			}
		}
		forged := store.Position{Millis: 1, ID: "x"}.Cursor()
		if _, err := s.List(ctx, store.Query{Cursor: forged[:len(forged)-1] + "!"}); err == nil {
			t.Errorf("a cursor with a foreign character is accepted")
		}
	})
	t.Run("ContextCanceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := newStore(t).List(cctx, store.Query{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("List with a canceled context: %v", err)
		}
	})
}

func put(t *testing.T, s engine.RecordStore, rec *engine.ExecutionRecord) {
	t.Helper()
	if err := s.Put(context.Background(), rec); err != nil {
		t.Fatalf("put %s: %v", rec.RequestID, err)
	}
}

// listAll follows the cursor from the first page of q (with page size limit) to the
// last and returns the request ids in order; it fails on a page over the limit or an
// id listed twice.
func listAll(t *testing.T, s store.RecordLister, q store.Query, limit int) []string {
	t.Helper()
	q.Limit = limit
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("more than 1000 pages")
		}
		page, err := s.List(context.Background(), q)
		if err != nil {
			t.Fatalf("List(%+v): %v", q, err)
		}
		if limit > 0 && len(page.Records) > limit {
			t.Fatalf("a page of limit %d holds %d records", limit, len(page.Records))
		}
		for _, r := range page.Records {
			if slices.Contains(ids, r.RequestID) {
				t.Fatalf("%s listed twice (pages so far: %v)", r.RequestID, ids)
			}
			ids = append(ids, r.RequestID)
		}
		if page.NextCursor == "" {
			return ids
		}
		q.Cursor = page.NextCursor
	}
}

// fixture is a set of records like the stock walkthrough's, newest first: an allowed
// quote (a plan policy in audit and a guard in warn mode would have denied it), a trade the plan policy rejected (request text with markup), a broker trade a
// guard denied, a 422 invalid plan, an open request whose state expired, and a cached
// answer on another generation.
func fixture(now time.Time) []*engine.ExecutionRecord {
	dec := func(p engine.FailurePolicy, a engine.Action, reason engine.Reason) *engine.DecisionRecord {
		return &engine.DecisionRecord{FailurePolicy: p, Action: a, Reason: reason}
	}
	inv := func(hook string, stage engine.Stage, d *engine.DecisionRecord) engine.Invocation {
		return engine.Invocation{HookName: hook, Phase: stage, Status: engine.InvocationSucceeded, Decision: d}
	}
	tenant := inv("tenant-context", engine.StageBeforePlanning, dec(engine.FailOpen, engine.ActionContinue, "no_decision"))
	accepted := inv("allowed-operations", engine.StageAfterPlanning, dec(engine.FailClosed, engine.ActionContinue, "accepted"))
	past, openUntil := now.Add(-time.Second), now.Add(time.Hour)
	at := func(d time.Duration) time.Time { return now.Add(-d * time.Minute) }
	check := func(outcome engine.CheckOutcome, code string) engine.OperationRecord {
		return engine.OperationRecord{Operation: op.ToolCall, StepID: "step-1", Outcome: outcome, Code: code, Generation: "g-1", PolicyRevision: "trade-limits-v1"}
	}
	audited := accepted
	audited.WouldDeny = []engine.Finding{{Mode: engine.RuleAudit, Rule: "rego data.mail", Cause: engine.CausePolicyDenied,
		Violations: []engine.Violation{{Code: "external_email", Message: "mail leaves the company"}}}}
	warned := check(engine.CheckAllow, "")
	warned.WouldDeny = []engine.Finding{{Mode: engine.RuleWarn, Rule: "guard tier", Code: "tier_limit", Cause: engine.CauseGuardDenied}}
	return []*engine.ExecutionRecord{
		{RequestID: "quote-1", Generation: "g-1", Tenant: "acme", Status: engine.RecordSucceeded, Lifecycle: engine.LifecycleCompleted, Revision: 5,
			PipelineHooks: []engine.Invocation{tenant, audited, inv("pii-redaction", engine.StageAfterSynthesis, dec(engine.FailOpen, engine.ActionContinue, "completed"))},
			Operations:    []engine.OperationRecord{warned}, CreatedAt: at(2), UpdatedAt: at(1)},
		{RequestID: "trade-1", Generation: "g-1", Tenant: "acme", Request: "Buy 100 ACME <script>alert(1)</script>", Status: engine.RecordFailed,
			Lifecycle: engine.LifecycleFailed, Cause: engine.CausePolicyDenied, Error: "required after-planning hook \"allowed-operations\" failed", Revision: 3,
			PipelineHooks: []engine.Invocation{tenant, inv("allowed-operations", engine.StageAfterPlanning, dec(engine.FailClosed, engine.ActionTerminate, engine.ReasonHookError))},
			Rejections: []engine.PlanRejection{{Phase: 1, Cause: engine.CausePolicyDenied, Hook: "allowed-operations", Reason: engine.ReasonHookError,
				Violations: []engine.Violation{{Code: "capability_not_allowed", StepID: "step-1", Message: "not allowed"}}}},
			CreatedAt: at(3), UpdatedAt: at(2)},
		{RequestID: "broker-1", Generation: "g-1", Status: engine.RecordRunning, Lifecycle: engine.LifecycleOpen, OpenUntil: &openUntil, Revision: 4,
			PipelineHooks: []engine.Invocation{tenant, accepted},
			Operations:    []engine.OperationRecord{check(engine.CheckAllow, ""), check(engine.CheckDeny, "trade_limit")}, CreatedAt: at(4), UpdatedAt: at(3)},
		{RequestID: "bad-plan", Generation: "g-1", Status: engine.RecordRunning, Lifecycle: engine.LifecycleOpen, OpenUntil: &openUntil, Revision: 2,
			PipelineHooks: []engine.Invocation{tenant},
			Rejections:    []engine.PlanRejection{{Phase: 1, Cause: engine.CauseInvalidPlan, Rule: 2, Code: "unknown_agent", StepID: "step-1"}},
			CreatedAt:     at(5), UpdatedAt: at(4)},
		{RequestID: "stale", Generation: "g-1", Status: engine.RecordRunning, Lifecycle: engine.LifecycleOpen, OpenUntil: &past, Revision: 1,
			PipelineHooks: []engine.Invocation{}, CreatedAt: at(6), UpdatedAt: at(5)},
		{RequestID: "cached", Generation: "g-2", Tenant: "globex", Status: engine.RecordSucceeded, Lifecycle: engine.LifecycleCompleted, Revision: 2,
			PipelineHooks: []engine.Invocation{inv("response-cache", engine.StageBeforePlanning, dec(engine.FailClosed, engine.ActionShortCircuit, "cache_match"))},
			CreatedAt:     at(7), UpdatedAt: at(6)},
	}
}
