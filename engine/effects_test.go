package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	memstore "github.com/agentd-dev/agentd/engine/store"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

// effectRun runs one after_synthesis hook that calls report with its context, and
// returns the trail and that context (which detached work may keep using).
func effectRun(t *testing.T, trail *engine.Trail, report func(ctx context.Context) error) context.Context {
	t.Helper()
	var hookCtx context.Context
	p := mustNew(t, []engine.Hook{&synthesisHook{name: "worker", fn: func(ctx context.Context, _ *engine.PipelineContext, r string) (string, error) {
		hookCtx = ctx
		return r, report(ctx)
	}}})
	p.AfterSynthesis(context.Background(), newPctx(), "r", trail)
	return hookCtx
}

func pending(id string) engine.Effect {
	return engine.Effect{EffectID: id, SchemaVersion: 1, Name: "write", Status: engine.EffectPending,
		StartedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func terminal(id string, status engine.EffectStatus, data string) engine.Effect {
	e := pending(id)
	e.Status, e.Data, e.Duration = status, json.RawMessage(data), 5*time.Millisecond
	return e
}

func onlyEffects(t *testing.T, trail *engine.Trail) []engine.Effect {
	t.Helper()
	invs := trail.Invocations()
	if len(invs) != 1 {
		t.Fatalf("recorded %d invocations, want 1", len(invs))
	}
	return invs[0].Effects
}

func TestEffects_AnnouncedBeforeReturnInEveryStage(t *testing.T) {
	report := func(ctx context.Context) error { return engine.ReportEffect(ctx, pending("job-1")) }
	ctx := context.Background()
	hooks := []engine.Hook{
		&legacyHook{name: "before", fn: func(ctx context.Context, _ *engine.PipelineContext) (*engine.ShortCircuit, error) {
			return nil, report(ctx)
		}},
		&planHook{name: "after", fn: func(ctx context.Context, _ *engine.PipelineContext, p *engine.RoutingPlan) (*engine.RoutingPlan, error) {
			return p, report(ctx)
		}},
		&executionHook{name: "exec", fn: func(ctx context.Context, _ *engine.PipelineContext, _ *engine.ExecutionResult) error {
			return report(ctx)
		}},
		&synthesisHook{name: "synth", fn: func(ctx context.Context, _ *engine.PipelineContext, r string) (string, error) {
			return r, report(ctx)
		}},
	}
	p := mustNew(t, hooks)
	trail := engine.NewTrail()
	if _, err := p.BeforePlanning(ctx, newPctx(), engine.NewGate(nil, false), trail); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AfterPlanning(ctx, newPctx(), threeStepPlan(), nil, trail); err != nil {
		t.Fatal(err)
	}
	p.AfterExecution(ctx, newPctx(), &engine.ExecutionResult{}, trail)
	p.AfterSynthesis(ctx, newPctx(), "r", trail)
	for _, inv := range trail.Invocations() {
		if inv.Status != engine.InvocationSucceeded || len(inv.Effects) != 1 || !reflect.DeepEqual(inv.Effects[0], pending("job-1")) {
			t.Errorf("%s: status %q, effects %+v; want the announced pending effect", inv.Phase, inv.Status, inv.Effects)
		}
	}
}

func TestEffects_HookEffectsPrecedeEnrichmentEffects(t *testing.T) {
	p := mustNew(t, []engine.Hook{&legacyHook{name: "rag", fn: func(ctx context.Context, pctx *engine.PipelineContext) (*engine.ShortCircuit, error) {
		pctx.Enrichments["rag_context"] = "doc"
		return nil, engine.ReportEffect(ctx, pending("retrieval"))
	}}})
	trail := engine.NewTrail()
	if _, err := p.BeforePlanning(context.Background(), newPctx(), engine.NewGate(nil, false), trail); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range trail.Invocations()[0].Effects {
		ids = append(ids, e.EffectID)
	}
	if want := []string{"retrieval", "planning_enrichment:rag_context"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("effects = %v, want %v", ids, want)
	}
}

func TestEffects_UpdateByIDReplaces(t *testing.T) {
	trail := engine.NewTrail()
	ctx := effectRun(t, trail, func(ctx context.Context) error {
		if err := engine.ReportEffect(ctx, pending("a")); err != nil {
			return err
		}
		if err := engine.ReportEffect(ctx, pending("b")); err != nil {
			return err
		}
		partial := terminal("a", engine.EffectPartial, `{"written":1}`)
		partial.Summary = "1 of 2"
		return engine.ReportEffect(ctx, partial)
	})
	done := terminal("b", engine.EffectFailed, `{"written":0}`)
	done.Error = "backend refused"
	if err := engine.ReportEffect(ctx, done); err != nil {
		t.Fatalf("late update: %v", err)
	}
	effects := onlyEffects(t, trail)
	wantA := terminal("a", engine.EffectPartial, `{"written":1}`)
	wantA.Summary = "1 of 2"
	if len(effects) != 2 {
		t.Fatalf("effects = %+v; want a and b, each replaced in place", effects)
	}
	for i, want := range []engine.Effect{wantA, done} {
		got := effects[i]
		if len(got.History) != 1 || got.History[0].Status != engine.EffectPending || got.History[0].ReplacedAt.IsZero() {
			t.Errorf("effect %s history = %+v, want the pending status it had", got.EffectID, got.History)
		}
		got.History = nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("effect = %+v, want %+v", got, want)
		}
	}
}

// An effect keeps the statuses it had before, in order, with when each was replaced;
// a report that keeps the status adds none, and a reporter cannot write the history.
func TestEffects_HistoryKeepsEarlierStatuses(t *testing.T) {
	trail := engine.NewTrail()
	ctx := effectRun(t, trail, func(ctx context.Context) error {
		forged := pending("job")
		forged.History = []engine.EffectChange{{Status: engine.EffectFailed}}
		if err := engine.ReportEffect(ctx, forged); err != nil {
			return err
		}
		return engine.ReportEffect(ctx, pending("job"))
	})
	if h := onlyEffects(t, trail)[0].History; h != nil {
		t.Fatalf("history after two pending reports = %+v, want none", h)
	}
	before := time.Now()
	if err := engine.ReportEffect(ctx, terminal("job", engine.EffectPartial, `{}`)); err != nil {
		t.Fatal(err)
	}
	if err := engine.ReportEffect(ctx, terminal("job", engine.EffectSucceeded, `{}`)); err != nil {
		t.Fatal(err)
	}
	h := onlyEffects(t, trail)[0].History
	if len(h) != 2 || h[0].Status != engine.EffectPending || h[1].Status != engine.EffectPartial ||
		h[0].ReplacedAt.Before(before) || h[1].ReplacedAt.Before(h[0].ReplacedAt) {
		t.Fatalf("history = %+v, want pending then partial, in order", h)
	}
	h[0].Status = "mutated"
	if onlyEffects(t, trail)[0].History[0].Status != engine.EffectPending {
		t.Fatal("a copy of the trail shares its effect history")
	}
}

func TestEffects_TerminalToPendingRejected(t *testing.T) {
	trail := engine.NewTrail()
	var inHook error
	ctx := effectRun(t, trail, func(ctx context.Context) error {
		if err := engine.ReportEffect(ctx, terminal("a", engine.EffectSucceeded, `{}`)); err != nil {
			return err
		}
		inHook = engine.ReportEffect(ctx, pending("a"))
		return nil
	})
	if !errors.Is(inHook, engine.ErrEffectRegression) {
		t.Fatalf("in-hook regression err = %v, want ErrEffectRegression", inHook)
	}
	if err := engine.ReportEffect(ctx, pending("a")); !errors.Is(err, engine.ErrEffectRegression) {
		t.Fatalf("late regression err = %v, want ErrEffectRegression", err)
	}
	if err := engine.ReportEffect(ctx, terminal("a", engine.EffectFailed, `{}`)); err != nil {
		t.Fatalf("terminal → terminal update: %v", err)
	}
	if effects := onlyEffects(t, trail); len(effects) != 1 || effects[0].Status != engine.EffectFailed {
		t.Fatalf("effects = %+v", effects)
	}
}

func TestEffects_NewIDAfterCompletionRejected(t *testing.T) {
	trail := engine.NewTrail()
	late := 0
	trail.OnLateEffect(func() { late++ })
	ctx := effectRun(t, trail, func(ctx context.Context) error { return engine.ReportEffect(ctx, pending("known")) })
	if err := engine.ReportEffect(ctx, pending("unannounced")); !errors.Is(err, engine.ErrEffectAfterComplete) {
		t.Fatalf("err = %v, want ErrEffectAfterComplete", err)
	}
	if effects := onlyEffects(t, trail); len(effects) != 1 || effects[0].EffectID != "known" || late != 0 {
		t.Fatalf("effects = %+v, late callbacks %d", effects, late)
	}
}

func TestEffects_LateUpdateCallsOnLateEffect(t *testing.T) {
	trail := engine.NewTrail()
	var seen []engine.EffectStatus
	trail.OnLateEffect(func() {
		// Runs without the trail's lock held: reading the trail must not deadlock.
		seen = append(seen, trail.Invocations()[0].Effects[0].Status)
	})
	ctx := effectRun(t, trail, func(ctx context.Context) error {
		if err := engine.ReportEffect(ctx, pending("job")); err != nil {
			return err
		}
		return engine.ReportEffect(ctx, pending("job"))
	})
	if len(seen) != 0 {
		t.Fatalf("OnLateEffect called %d times during the invocation", len(seen))
	}
	if err := engine.ReportEffect(ctx, terminal("job", engine.EffectSucceeded, `{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, []engine.EffectStatus{engine.EffectSucceeded}) {
		t.Fatalf("late callbacks saw %v, want one call after the update landed", seen)
	}
	if err := engine.ReportEffect(ctx, pending("job")); err == nil || len(seen) != 1 {
		t.Fatalf("a rejected late update called OnLateEffect")
	}
}

func TestEffects_LateUpdateSavesNewRecordRevision(t *testing.T) {
	store := &putLog{}
	var hookCtx context.Context
	p := mustNew(t, []engine.Hook{&synthesisHook{name: "worker", fn: func(ctx context.Context, _ *engine.PipelineContext, r string) (string, error) {
		hookCtx = ctx
		return r, engine.ReportEffect(ctx, pending("job"))
	}}})
	sess, err := newDriver(t, p, nil, store).Open(context.Background(), "req-1", engine.Opening{Text: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.AfterSynthesis(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	before := len(store.all())
	if err := engine.ReportEffect(hookCtx, terminal("job", engine.EffectSucceeded, `{}`)); err != nil {
		t.Fatal(err)
	}
	revs := store.all()
	if len(revs) != before+1 {
		t.Fatalf("late update wrote %d revisions, want 1", len(revs)-before)
	}
	last := revs[len(revs)-1]
	if last.Revision <= revs[before-1].Revision || last.PipelineHooks[0].Effects[0].Status != engine.EffectSucceeded {
		t.Fatalf("late revision = %d with effect %+v", last.Revision, last.PipelineHooks[0].Effects[0])
	}
}

func TestEffects_ConcurrentLateUpdates(t *testing.T) {
	trail := engine.NewTrail()
	var mu sync.Mutex
	late := 0
	trail.OnLateEffect(func() { mu.Lock(); late++; mu.Unlock() })
	ctx := effectRun(t, trail, func(ctx context.Context) error { return engine.ReportEffect(ctx, pending("job")) })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := engine.ReportEffect(ctx, terminal("job", engine.EffectSucceeded, `{}`)); err != nil {
				t.Error(err)
			}
			_ = trail.Invocations()
		})
	}
	wg.Wait()
	if late != 8 || len(onlyEffects(t, trail)) != 1 {
		t.Fatalf("late callbacks %d, effects %d", late, len(onlyEffects(t, trail)))
	}
}

func TestEffects_DataMustBeValidJSON(t *testing.T) {
	cases := map[string]engine.Effect{
		"invalid JSON":   terminal("a", engine.EffectSucceeded, `{"unterminated":`),
		"bare text":      terminal("a", engine.EffectSucceeded, `ok`),
		"empty id":       terminal("", engine.EffectSucceeded, `{}`),
		"unknown status": terminal("a", "done", `{}`),
		"empty status":   terminal("a", "", `{}`),
		"negative schema": func() engine.Effect {
			e := pending("a")
			e.SchemaVersion = -1
			return e
		}(),
	}
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			trail := engine.NewTrail()
			var err error
			effectRun(t, trail, func(ctx context.Context) error {
				err = engine.ReportEffect(ctx, e)
				return nil
			})
			if !errors.Is(err, engine.ErrInvalidEffect) {
				t.Fatalf("err = %v, want ErrInvalidEffect", err)
			}
			if effects := onlyEffects(t, trail); len(effects) != 0 {
				t.Fatalf("invalid effect recorded: %+v", effects)
			}
		})
	}
	for name, data := range map[string]string{"empty": "", "null": "null", "array": `[1,"two"]`, "string": `"s"`} {
		t.Run("valid "+name, func(t *testing.T) {
			trail := engine.NewTrail()
			effectRun(t, trail, func(ctx context.Context) error {
				return engine.ReportEffect(ctx, terminal("a", engine.EffectSucceeded, data))
			})
			if effects := onlyEffects(t, trail); len(effects) != 1 || string(effects[0].Data) != data {
				t.Fatalf("effects = %+v", effects)
			}
		})
	}
}

func TestEffects_DataCopiedInAndOut(t *testing.T) {
	trail := engine.NewTrail()
	data := []byte(`{"rows":12}`)
	effectRun(t, trail, func(ctx context.Context) error {
		err := engine.ReportEffect(ctx, engine.Effect{EffectID: "a", Status: engine.EffectSucceeded, Data: data})
		copy(data, `{"rows":99}`)
		return err
	})
	out := trail.Invocations()
	out[0].Effects[0].Data[2] = 'X'
	out[0].Effects[0].Status = engine.EffectFailed
	out[0].Decision.Reason = "tampered"
	out[0].Effects = append(out[0].Effects, engine.Effect{EffectID: "injected"})

	again := trail.Invocations()[0]
	if len(again.Effects) != 1 || string(again.Effects[0].Data) != `{"rows":12}` || again.Effects[0].Status != engine.EffectSucceeded {
		t.Fatalf("stored effects = %+v; caller mutations leaked in", again.Effects)
	}
	if again.Decision.Reason != engine.ReasonCompleted {
		t.Fatalf("stored decision = %+v; Invocations shares the decision", again.Decision)
	}
}

func TestEffects_NoTrailIsNoop(t *testing.T) {
	if err := engine.ReportEffect(context.Background(), engine.Effect{}); err != nil {
		t.Fatalf("outside a hook: %v, want nil", err)
	}
	var err error
	effectRun(t, nil, func(ctx context.Context) error {
		err = engine.ReportEffect(ctx, engine.Effect{EffectID: "bad", Data: json.RawMessage("{")})
		return nil
	})
	if err != nil {
		t.Fatalf("recording off: %v, want nil", err)
	}
	var nilTrail *engine.Trail
	if nilTrail.Invocations() != nil {
		t.Fatalf("nil trail reports invocations")
	}
}

func TestEffects_StatusSeparateFromInvocationStatus(t *testing.T) {
	cases := map[string]struct {
		effect    engine.EffectStatus
		hookErr   error
		invStatus engine.InvocationStatus
	}{
		"hook failed, work succeeded":  {engine.EffectSucceeded, errors.New("late ack"), engine.InvocationFailed},
		"hook succeeded, work failed":  {engine.EffectFailed, nil, engine.InvocationSucceeded},
		"hook succeeded, work pending": {engine.EffectPending, nil, engine.InvocationSucceeded},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			trail := engine.NewTrail()
			effectRun(t, trail, func(ctx context.Context) error {
				if err := engine.ReportEffect(ctx, terminal("w", tc.effect, `{}`)); err != nil {
					t.Fatal(err)
				}
				return tc.hookErr
			})
			inv := trail.Invocations()[0]
			if inv.Status != tc.invStatus || inv.Effects[0].Status != tc.effect {
				t.Fatalf("invocation %q / effect %q, want %q / %q", inv.Status, inv.Effects[0].Status, tc.invStatus, tc.effect)
			}
		})
	}
}

func TestInvocation_RecordFields(t *testing.T) {
	ctx := context.Background()
	p := mustNew(t, []engine.Hook{
		&executionHook{name: "one"},
		&executionHook{name: "two", fn: func(context.Context, *engine.PipelineContext, *engine.ExecutionResult) error {
			return errors.New("exact: text\twith tab")
		}},
		&executionHook{name: "three"},
	})
	trail := engine.NewTrail()
	before := time.Now()
	p.AfterExecution(ctx, newPctx(), &engine.ExecutionResult{}, trail)
	p.AfterExecution(ctx, newPctx(), &engine.ExecutionResult{}, trail)
	invs := trail.Invocations()
	if len(invs) != 6 {
		t.Fatalf("recorded %d invocations, want 6", len(invs))
	}
	for i, inv := range invs {
		if want := i%3 + 1; inv.Sequence != want {
			t.Errorf("invocation %d: sequence %d, want %d (1-based, per stage run)", i, inv.Sequence, want)
		}
		if inv.StartedAt.Location() != time.UTC || inv.StartedAt.Before(before.Truncate(time.Second)) {
			t.Errorf("invocation %d: started_at %v, want UTC", i, inv.StartedAt)
		}
		if inv.Duration < 0 || inv.PlanPhase != 0 || inv.Phase != engine.StageAfterExecution {
			t.Errorf("invocation %d: duration %v, plan_phase %d, phase %q", i, inv.Duration, inv.PlanPhase, inv.Phase)
		}
	}
	if invs[1].Error != "exact: text\twith tab" || invs[0].Error != "" {
		t.Fatalf("errors = %q / %q", invs[0].Error, invs[1].Error)
	}
	raw, err := json.Marshal(invs[0])
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"hook_name", "phase", "status", "sequence", "started_at", "duration", "decision"} {
		if _, ok := fields[key]; !ok {
			t.Errorf("JSON lacks %q: %s", key, raw)
		}
	}
	for _, key := range []string{"plan_phase", "error", "effects"} {
		if _, ok := fields[key]; ok {
			t.Errorf("JSON has empty %q: %s", key, raw)
		}
	}
	if !strings.HasSuffix(string(fields["started_at"]), `Z"`) {
		t.Errorf("started_at %s is not encoded in UTC", fields["started_at"])
	}
	undecided := invs[0]
	undecided.Decision = nil
	if raw, _ := json.Marshal(undecided); strings.Contains(string(raw), `"decision"`) {
		t.Errorf("an invocation without a decision encodes one: %s", raw)
	}
}

func TestInvocation_JSONShape(t *testing.T) {
	inv := engine.Invocation{
		HookName: "governed", Phase: engine.StageAfterPlanning, Status: engine.InvocationFailed,
		Sequence: 3, PlanPhase: 2, StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), Duration: 1500,
		Error: "denied",
		Effects: []engine.Effect{{
			EffectID: "e-1", SchemaVersion: 1, Name: "audit", Status: engine.EffectPartial, Summary: "1 of 2",
			Data: json.RawMessage(`{"n":1}`), Error: "slow", StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Duration: 7,
		}},
		Decision: &engine.DecisionRecord{FailurePolicy: engine.FailClosed, Action: engine.ActionTerminate, Reason: engine.ReasonHookError, Cause: engine.CauseHookError},
	}
	raw, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hook_name":"governed","phase":"after_planning","status":"failed","sequence":3,"plan_phase":2,` +
		`"started_at":"2025-01-02T03:04:05.000000006Z","duration":1500,"error":"denied",` +
		`"effects":[{"effect_id":"e-1","schema_version":1,"name":"audit","status":"partial","summary":"1 of 2",` +
		`"data":{"n":1},"error":"slow","started_at":"2025-01-02T03:04:05Z","duration":7}],` +
		`"decision":{"failure_policy":"fail_closed","action":"terminate","reason":"hook_error","cause":"hook_error"}}`
	if string(raw) != want {
		t.Fatalf("JSON =\n%s\nwant\n%s", raw, want)
	}
}

func TestInvocation_MissingDecisionOmittedOnReencode(t *testing.T) {
	stored := `{"hook_name":"legacy","phase":"after_synthesis","status":"succeeded","sequence":1,` +
		`"started_at":"2024-05-01T10:00:00Z","duration":1500}`
	var inv engine.Invocation
	if err := json.Unmarshal([]byte(stored), &inv); err != nil {
		t.Fatal(err)
	}
	if inv.Decision != nil {
		t.Fatalf("decision inferred: %+v", inv.Decision)
	}
	raw, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	if _, ok := fields["decision"]; ok {
		t.Fatalf("re-encoded record has a decision: %s", raw)
	}
	var roundTrip engine.Invocation
	if err := json.Unmarshal(raw, &roundTrip); err != nil || !reflect.DeepEqual(roundTrip, inv) {
		t.Fatalf("round trip = %+v, %v; want %+v", roundTrip, err, inv)
	}
}

// A pending effect completes by id from outside the hook's process, once: an effect
// nobody announced cannot be created, and a terminal one takes no update.
func TestEffects_CompletedByIDOnce(t *testing.T) {
	ctx := context.Background()
	store := memstore.NewMemory(memstore.MemoryOptions{})
	p := mustNew(t, []engine.Hook{&synthesisHook{name: "writer", fn: func(ctx context.Context, _ *engine.PipelineContext, r string) (string, error) {
		return r, engine.ReportEffect(ctx, pending("audit-write"))
	}}})
	d := newDriver(t, p, nil, store)
	s, err := d.Open(ctx, "r", engine.Opening{Text: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterSynthesis(ctx, "answer"); err != nil {
		t.Fatal(err)
	}
	done := terminal("audit-write", engine.EffectSucceeded, `{"rows":1}`)
	if err := d.CompleteEffect(ctx, "r", done); err != nil {
		t.Fatal(err)
	}
	rec, _ := store.Get(ctx, "r")
	if got := rec.PipelineHooks[0].Effects[0]; got.Status != engine.EffectSucceeded || string(got.Data) != `{"rows":1}` ||
		len(got.History) != 1 || got.History[0].Status != engine.EffectPending {
		t.Fatalf("effect = %+v, want succeeded with the pending status in its history", got)
	}
	for name, tc := range map[string]struct {
		id   string
		e    engine.Effect
		code engine.EffectUpdateCode
	}{
		"terminal once":   {"r", terminal("audit-write", engine.EffectFailed, `{}`), engine.UpdateTerminalEffect},
		"never announced": {"r", terminal("other", engine.EffectSucceeded, `{}`), engine.UpdateUnknownEffect},
		"no such request": {"nobody", done, engine.UpdateUnknownEffect},
		"invalid data":    {"r", terminal("audit-write", engine.EffectSucceeded, `{bad`), engine.UpdateInvalidEffect},
	} {
		var ee *engine.EffectError
		if err := d.CompleteEffect(ctx, tc.id, tc.e); !errors.As(err, &ee) || ee.Code != tc.code {
			t.Errorf("%s: err = %v, want %s", name, err, tc.code)
		}
	}
}
