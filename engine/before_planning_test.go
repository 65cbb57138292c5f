package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"reflect"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// decide returns a decision hook that always answers d.
func decide(name string, d *engine.ShortCircuitDecision) *decisionHook {
	return &decisionHook{name: name, fn: func(context.Context, *engine.PipelineContext, engine.Gate) (*engine.ShortCircuitDecision, error) {
		return d, nil
	}}
}

func cacheDecision(response string, against map[string]string) *engine.ShortCircuitDecision {
	return &engine.ShortCircuitDecision{
		ShortCircuit:  &engine.ShortCircuit{Response: response, Source: "semantic_cache"},
		Kind:          engine.KindCache,
		CachedAgainst: against,
	}
}

func authoritative(response string) *engine.ShortCircuitDecision {
	return &engine.ShortCircuitDecision{
		ShortCircuit: &engine.ShortCircuit{Response: response, Source: "policy"},
		Kind:         engine.KindAuthoritative,
	}
}

// runBefore runs before_planning with a fresh trail and returns its outcome and records.
func runBefore(t *testing.T, p *engine.Pipeline, gate engine.Gate) (*engine.ShortCircuitOutcome, []engine.Invocation, error) {
	t.Helper()
	trail := engine.NewTrail()
	out, err := p.BeforePlanning(context.Background(), newPctx(), gate, trail)
	return out, trail.Invocations(), err
}

func TestBeforePlanning_RunsInOrderSkipsNonParticipants(t *testing.T) {
	var order []string
	note := func(name string) func(context.Context, *engine.PipelineContext) (*engine.ShortCircuit, error) {
		return func(context.Context, *engine.PipelineContext) (*engine.ShortCircuit, error) {
			order = append(order, name)
			return nil, nil
		}
	}
	d := &decisionHook{name: "d", fn: func(context.Context, *engine.PipelineContext, engine.Gate) (*engine.ShortCircuitDecision, error) {
		order = append(order, "d")
		return nil, nil
	}}
	p := mustNew(t, []engine.Hook{
		&legacyHook{name: "a", fn: note("a")},
		&planHook{name: "plan-only"},
		d,
		&idleHook{name: "idle"},
		&synthesisHook{name: "synth-only"},
		&legacyHook{name: "b", fn: note("b")},
	})
	out, invs, err := runBefore(t, p, engine.NewGate(nil, false))
	if out != nil || err != nil {
		t.Fatalf("BeforePlanning = %v, %v; want nil, nil", out, err)
	}
	if want := []string{"a", "d", "b"}; !reflect.DeepEqual(order, want) {
		t.Fatalf("call order = %v, want %v", order, want)
	}
	if got := hookNames(invs); !reflect.DeepEqual(got, []string{"a", "d", "b"}) {
		t.Fatalf("recorded %v: non-participants must not be recorded", got)
	}
	for i, inv := range invs {
		checkInvocation(t, inv, inv.HookName, engine.StageBeforePlanning, i+1, engine.InvocationSucceeded,
			decision(engine.FailOpen, engine.ActionContinue, engine.ReasonNoDecision), "")
	}
}

func TestBeforePlanning_HookErrorFailsOpen(t *testing.T) {
	logs := &logRecorder{}
	boom := errors.New("retriever unavailable: 503")
	next := &legacyHook{name: "next"}
	p := mustNew(t, []engine.Hook{
		&decisionHook{name: "cache", fn: func(context.Context, *engine.PipelineContext, engine.Gate) (*engine.ShortCircuitDecision, error) {
			return authoritative("ignored"), boom
		}},
		&legacyHook{name: "rag", fn: func(context.Context, *engine.PipelineContext) (*engine.ShortCircuit, error) {
			return &engine.ShortCircuit{Response: "ignored"}, boom
		}},
		next,
	}, engine.WithLogger(slog.New(logs)))
	out, invs, err := runBefore(t, p, engine.NewGate(nil, false))
	if out != nil || err != nil {
		t.Fatalf("BeforePlanning = %v, %v; an erroring hook must neither short-circuit nor fail", out, err)
	}
	if next.calls != 1 {
		t.Fatalf("next hook ran %d times, want 1", next.calls)
	}
	for i, name := range []string{"cache", "rag"} {
		checkInvocation(t, invs[i], name, engine.StageBeforePlanning, i+1, engine.InvocationFailed,
			decision(engine.FailOpen, engine.ActionContinue, engine.ReasonHookError), boom.Error())
	}
	if got := logs.warnings(); !reflect.DeepEqual(got, []string{"cache", "rag"}) {
		t.Fatalf("warnings for hooks %v, want [cache rag]", got)
	}
}

func TestBeforePlanning_NilDecisionIsNoDecision(t *testing.T) {
	p := mustNew(t, []engine.Hook{decide("decision", nil), &legacyHook{name: "legacy"}})
	out, invs, err := runBefore(t, p, engine.NewGate(nil, false))
	if out != nil || err != nil {
		t.Fatalf("BeforePlanning = %v, %v; want nil, nil", out, err)
	}
	for i, name := range []string{"decision", "legacy"} {
		checkInvocation(t, invs[i], name, engine.StageBeforePlanning, i+1, engine.InvocationSucceeded,
			decision(engine.FailOpen, engine.ActionContinue, engine.ReasonNoDecision), "")
	}
}

// checkContractError asserts a before_planning contract failure by hook "bad" at
// sequence 2 with reason, and that the hook after it did not run.
func checkContractError(t *testing.T, d *engine.ShortCircuitDecision, reason engine.Reason) {
	t.Helper()
	later := &legacyHook{name: "later"}
	p := mustNew(t, []engine.Hook{&legacyHook{name: "first"}, decide("bad", d), later})
	out, invs, err := runBefore(t, p, engine.NewGate(nil, false))
	if out != nil {
		t.Fatalf("outcome = %+v, want none", out)
	}
	var ce *engine.ContractError
	if !errors.As(err, &ce) || ce.Hook != "bad" || ce.Reason != reason {
		t.Fatalf("err = %#v, want *ContractError{bad, %s}", err, reason)
	}
	if later.calls != 0 || len(invs) != 2 {
		t.Fatalf("later hook calls = %d, records %v; the request must stop at the contract error", later.calls, hookNames(invs))
	}
	checkInvocation(t, invs[1], "bad", engine.StageBeforePlanning, 2, engine.InvocationFailed,
		decision(engine.FailClosed, engine.ActionTerminate, reason), err.Error())
}

func TestBeforePlanning_MissingPayloadFailsRequest(t *testing.T) {
	for name, kind := range map[string]engine.ShortCircuitKind{
		"authoritative": engine.KindAuthoritative, "cache": engine.KindCache, "unknown kind": "bogus",
	} {
		t.Run(name, func(t *testing.T) {
			checkContractError(t, &engine.ShortCircuitDecision{Kind: kind}, engine.ReasonMissingPayload)
		})
	}
}

func TestBeforePlanning_UnknownKindFailsRequest(t *testing.T) {
	for name, kind := range map[string]engine.ShortCircuitKind{"empty": "", "unknown": "stale-cache", "case": "Cache"} {
		t.Run(name, func(t *testing.T) {
			d := &engine.ShortCircuitDecision{ShortCircuit: &engine.ShortCircuit{Response: "r"}, Kind: kind}
			checkContractError(t, d, engine.ReasonUnknownKind)
		})
	}
}

func TestBeforePlanning_AuthoritativeAcceptedWithReadsDisabled(t *testing.T) {
	p := mustNew(t, []engine.Hook{decide("policy", authoritative("denied by policy"))})
	out, invs, err := runBefore(t, p, engine.NewGate(map[string]string{"locale": "en"}, true))
	if err != nil || out == nil {
		t.Fatalf("BeforePlanning = %v, %v; want an accepted short circuit", out, err)
	}
	if out.Hook != "policy" || out.Kind != engine.KindAuthoritative || out.Reason != engine.ReasonAuthoritative ||
		out.ShortCircuit != (engine.ShortCircuit{Response: "denied by policy", Source: "policy"}) {
		t.Fatalf("outcome = %+v", out)
	}
	checkInvocation(t, invs[0], "policy", engine.StageBeforePlanning, 1, engine.InvocationSucceeded,
		decision(engine.FailClosed, engine.ActionShortCircuit, engine.ReasonAuthoritative), "")
}

func TestBeforePlanning_CacheReadDisabled(t *testing.T) {
	vary := map[string]string{"locale": "en"}
	later := &legacyHook{name: "later"}
	p := mustNew(t, []engine.Hook{decide("cache", cacheDecision("cached", vary)), later})
	out, invs, err := runBefore(t, p, engine.NewGate(vary, true))
	if out != nil || err != nil {
		t.Fatalf("BeforePlanning = %v, %v; a cache answer must not be served with reads disabled", out, err)
	}
	if later.calls != 1 {
		t.Fatalf("later hook calls = %d; a rejected cache decision continues", later.calls)
	}
	checkInvocation(t, invs[0], "cache", engine.StageBeforePlanning, 1, engine.InvocationSucceeded,
		decision(engine.FailClosed, engine.ActionContinue, engine.ReasonCacheReadDisabled), "")
}

func TestBeforePlanning_CacheMatchShortCircuits(t *testing.T) {
	vary := map[string]string{"locale": "en", "tenant": "acme"}
	p := mustNew(t, []engine.Hook{decide("cache", cacheDecision("cached", maps.Clone(vary)))})
	out, invs, err := runBefore(t, p, engine.NewGate(vary, false))
	if err != nil || out == nil || out.Kind != engine.KindCache || out.Reason != engine.ReasonCacheMatch {
		t.Fatalf("BeforePlanning = %+v, %v; want a cache_match short circuit", out, err)
	}
	if !reflect.DeepEqual(out.CachedAgainst, vary) {
		t.Fatalf("cached_against = %v, want %v", out.CachedAgainst, vary)
	}
	checkInvocation(t, invs[0], "cache", engine.StageBeforePlanning, 1, engine.InvocationSucceeded,
		decision(engine.FailClosed, engine.ActionShortCircuit, engine.ReasonCacheMatch), "")
}

func TestBeforePlanning_CacheMismatchIsSymmetric(t *testing.T) {
	cases := map[string]struct{ gate, entry map[string]string }{
		"key only on gate side":         {map[string]string{"locale": "en", "tenant": "acme"}, map[string]string{"locale": "en"}},
		"key only on entry side":        {map[string]string{"locale": "en"}, map[string]string{"locale": "en", "tenant": "acme"}},
		"different value":               {map[string]string{"locale": "en"}, map[string]string{"locale": "de"}},
		"empty value vs absent (gate)":  {map[string]string{"locale": ""}, nil},
		"empty value vs absent (entry)": {nil, map[string]string{"locale": ""}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			later := &legacyHook{name: "later"}
			p := mustNew(t, []engine.Hook{decide("cache", cacheDecision("stale", tc.entry)), later})
			out, invs, err := runBefore(t, p, engine.NewGate(tc.gate, false))
			if out != nil || err != nil || later.calls != 1 {
				t.Fatalf("BeforePlanning = %v, %v (later calls %d); want planning to proceed", out, err, later.calls)
			}
			checkInvocation(t, invs[0], "cache", engine.StageBeforePlanning, 1, engine.InvocationSucceeded,
				decision(engine.FailClosed, engine.ActionContinue, engine.ReasonCacheMismatch), "")
		})
	}
}

func TestBeforePlanning_CacheKeyAbsentOnBothSidesMatches(t *testing.T) {
	cases := map[string]struct{ gate, entry map[string]string }{
		"both nil":            {nil, nil},
		"nil gate, empty map": {nil, map[string]string{}},
		"empty gate, nil map": {map[string]string{}, nil},
		"shared keys only":    {map[string]string{"locale": "en"}, map[string]string{"locale": "en"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := mustNew(t, []engine.Hook{decide("cache", cacheDecision("hit", tc.entry))})
			out, _, err := runBefore(t, p, engine.NewGate(tc.gate, false))
			if err != nil || out == nil || out.Reason != engine.ReasonCacheMatch {
				t.Fatalf("BeforePlanning = %+v, %v; want cache_match", out, err)
			}
		})
	}
}

func TestBeforePlanning_CachedAgainstIsCopied(t *testing.T) {
	entry := map[string]string{"locale": "en"}
	p := mustNew(t, []engine.Hook{decide("cache", cacheDecision("hit", entry))})
	out, _, err := runBefore(t, p, engine.NewGate(map[string]string{"locale": "en"}, false))
	if err != nil || out == nil {
		t.Fatalf("BeforePlanning = %v, %v", out, err)
	}
	entry["locale"] = "de"
	entry["tenant"] = "x"
	if want := map[string]string{"locale": "en"}; !reflect.DeepEqual(out.CachedAgainst, want) {
		t.Fatalf("outcome cached_against = %v after the hook's map changed, want %v", out.CachedAgainst, want)
	}
	out.CachedAgainst["locale"] = "fr"
	if entry["locale"] != "de" {
		t.Fatalf("outcome shares its map with the hook's decision")
	}
}

func TestBeforePlanning_EachHookGetsOwnGate(t *testing.T) {
	vary := map[string]string{"locale": "en"}
	var seen []map[string]string
	var disabled []bool
	vandal := &decisionHook{name: "vandal", fn: func(_ context.Context, _ *engine.PipelineContext, g engine.Gate) (*engine.ShortCircuitDecision, error) {
		m := g.CacheVary()
		seen, disabled = append(seen, maps.Clone(m)), append(disabled, g.ResponseCacheReadDisabled())
		m["locale"] = "de"
		m["tenant"] = "evil"
		// The vandal's own cache entry echoes its mutated map: the gate must still
		// judge it against the real dimensions.
		return cacheDecision("poisoned", m), nil
	}}
	checker := &decisionHook{name: "checker", fn: func(_ context.Context, _ *engine.PipelineContext, g engine.Gate) (*engine.ShortCircuitDecision, error) {
		seen, disabled = append(seen, g.CacheVary()), append(disabled, g.ResponseCacheReadDisabled())
		return cacheDecision("fresh", map[string]string{"locale": "en"}), nil
	}}
	p := mustNew(t, []engine.Hook{vandal, checker})
	out, invs, err := runBefore(t, p, engine.NewGate(vary, false))
	if err != nil || out == nil || out.Hook != "checker" || out.ShortCircuit.Response != "fresh" {
		t.Fatalf("BeforePlanning = %+v, %v; want checker's cache hit", out, err)
	}
	for i, m := range seen {
		if !reflect.DeepEqual(m, vary) || disabled[i] {
			t.Fatalf("hook %d saw gate %v (read disabled %v), want %v", i, m, disabled[i], vary)
		}
	}
	if *invs[0].Decision != decision(engine.FailClosed, engine.ActionContinue, engine.ReasonCacheMismatch) {
		t.Fatalf("vandal decision = %+v, want cache_dimension_mismatch", *invs[0].Decision)
	}
	if vary["tenant"] != "" || len(vary) != 1 {
		t.Fatalf("caller's variation map was changed: %v", vary)
	}
}

func TestBeforePlanning_NewGateCopiesCallerMap(t *testing.T) {
	vary := map[string]string{"locale": "en"}
	gate := engine.NewGate(vary, false)
	vary["locale"] = "de"
	if got := gate.CacheVary(); got["locale"] != "en" {
		t.Fatalf("gate follows the caller's map: %v", got)
	}
}

func TestBeforePlanning_FirstShortCircuitWins(t *testing.T) {
	later := &decisionHook{name: "later"}
	laterLegacy := &legacyHook{name: "later-legacy"}
	p := mustNew(t, []engine.Hook{
		decide("miss", cacheDecision("stale", map[string]string{"locale": "de"})),
		decide("winner", authoritative("first")),
		decide("loser", authoritative("second")),
		later, laterLegacy,
	})
	out, invs, err := runBefore(t, p, engine.NewGate(map[string]string{"locale": "en"}, false))
	if err != nil || out == nil || out.Hook != "winner" || out.ShortCircuit.Response != "first" {
		t.Fatalf("BeforePlanning = %+v, %v; want winner's answer", out, err)
	}
	if got := hookNames(invs); !reflect.DeepEqual(got, []string{"miss", "winner"}) {
		t.Fatalf("recorded %v; no hook may run after the accepted short circuit", got)
	}
	if later.calls != 0 || laterLegacy.calls != 0 {
		t.Fatalf("later hooks ran")
	}
}

func TestBeforePlanning_ShortCircuitSkipsPlanningExecutionAndLaterStages(t *testing.T) {
	log := &eventLog{}
	planner, exec, synth := &planHook{name: "plan-review"}, &executionHook{name: "audit"}, &synthesisHook{name: "redact"}
	p := mustNew(t, []engine.Hook{decide("policy", authoritative("no")), planner, exec, synth})
	l := recordingLifecycle(t, p, nil, log, threeStepPlan())
	out, err := l.Run(context.Background(), engine.Request{ID: "r-1", Text: "hi"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if events := log.list(); len(events) != 0 {
		t.Fatalf("lifecycle events after a short circuit: %v", events)
	}
	if planner.calls+exec.calls+synth.calls != 0 {
		t.Fatalf("later stage hooks ran: %d/%d/%d", planner.calls, exec.calls, synth.calls)
	}
	if out.Response.Response != "no" || out.Response.Confidence != 1.0 {
		t.Fatalf("response = %+v", out.Response)
	}
	if out.Record.FinalResponseSource != engine.SourceShortCircuit || len(out.Record.PipelineHooks) != 1 {
		t.Fatalf("record source %q with %d invocations", out.Record.FinalResponseSource, len(out.Record.PipelineHooks))
	}
}

func TestBeforePlanning_ShortCircuitResponseMergesMetadata(t *testing.T) {
	p := mustNew(t, []engine.Hook{&decisionHook{name: "policy", fn: func(_ context.Context, pctx *engine.PipelineContext, _ engine.Gate) (*engine.ShortCircuitDecision, error) {
		pctx.Enrichments["shared"] = "from enrichments"
		pctx.Enrichments["user_profile"] = "vip"
		return authoritative("answer"), nil
	}}})
	pctx := &engine.PipelineContext{
		Request:     "q",
		Metadata:    map[string]any{"shared": "from metadata", "channel": "web"},
		Enrichments: map[string]any{},
	}
	out, err := p.BeforePlanning(context.Background(), pctx, engine.NewGate(nil, false), nil)
	if err != nil || out == nil {
		t.Fatalf("BeforePlanning = %v, %v", out, err)
	}
	want := engine.Response{Response: "answer", Confidence: 1.0, Metadata: map[string]any{
		"shared": "from enrichments", "channel": "web", "user_profile": "vip",
	}}
	if !reflect.DeepEqual(out.Response, want) {
		t.Fatalf("response = %+v, want %+v", out.Response, want)
	}
	out.Response.Metadata["channel"] = "changed"
	if pctx.Metadata["channel"] != "web" {
		t.Fatalf("response metadata aliases the request metadata")
	}
}

func TestBeforePlanning_LegacyShortCircuitIsAuthoritative(t *testing.T) {
	later := &decisionHook{name: "later"}
	logs := &logRecorder{}
	p := mustNew(t, []engine.Hook{&legacyHook{name: "guard", fn: func(context.Context, *engine.PipelineContext) (*engine.ShortCircuit, error) {
		return &engine.ShortCircuit{Response: "blocked", Source: "guardrail"}, nil
	}}, later}, engine.WithLogger(slog.New(logs)))
	// Cache reads disabled and reserved dimensions present: an authoritative answer
	// holds regardless.
	out, invs, err := runBefore(t, p, engine.NewGate(map[string]string{"locale": "en"}, true))
	if err != nil || out == nil || out.Kind != engine.KindAuthoritative || out.ShortCircuit.Source != "guardrail" {
		t.Fatalf("BeforePlanning = %+v, %v; want an authoritative short circuit", out, err)
	}
	if later.calls != 0 {
		t.Fatalf("later hook ran after the legacy short circuit")
	}
	if got := logs.warnings(); !reflect.DeepEqual(got, []string{"guard"}) {
		t.Fatalf("warnings = %v; a legacy short circuit with reserved dimensions must be diagnosed", got)
	}
	checkInvocation(t, invs[0], "guard", engine.StageBeforePlanning, 1, engine.InvocationSucceeded,
		decision(engine.FailClosed, engine.ActionShortCircuit, engine.ReasonAuthoritative), "")
}

func TestBeforePlanning_DecisionFormPreferredOverLegacy(t *testing.T) {
	h := &bothForms{}
	p := mustNew(t, []engine.Hook{h})
	out, _, err := runBefore(t, p, engine.NewGate(nil, false))
	if err != nil || out != nil || h.decision != 1 || h.legacy != 0 {
		t.Fatalf("outcome %v, err %v, decision calls %d, legacy calls %d; want only the decision form", out, err, h.decision, h.legacy)
	}
}

// bothForms implements the legacy and the decision form of before_planning.
type bothForms struct{ decision, legacy int }

func (*bothForms) Name() string { return "both" }
func (h *bothForms) BeforePlanning(context.Context, *engine.PipelineContext) (*engine.ShortCircuit, error) {
	h.legacy++
	return &engine.ShortCircuit{Response: "legacy"}, nil
}
func (h *bothForms) BeforePlanningDecision(context.Context, *engine.PipelineContext, engine.Gate) (*engine.ShortCircuitDecision, error) {
	h.decision++
	return nil, nil
}
