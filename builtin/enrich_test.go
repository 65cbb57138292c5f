package builtin_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

func TestEnrich_Modes(t *testing.T) {
	tests := []struct {
		name     string
		steps    string
		metadata map[string]any
		want     map[string]any
	}{
		{
			name:  "set a string",
			steps: `      - enrich: {key: user_profile, value: "'Plan: ' + request"}`,
			want:  map[string]any{"user_profile": "Plan: price of ACME?"},
		},
		{
			name: "set replaces",
			steps: `      - enrich: {key: rag_context, value: "'first'"}
      - enrich: {key: rag_context, value: "'second'", mode: set}`,
			want: map[string]any{"rag_context": "second"},
		},
		{
			name:     "set replaces a promoted value",
			steps:    `      - enrich: {key: rag_context, value: "'fresh'"}`,
			metadata: map[string]any{"rag_context": "stale"},
			want:     map[string]any{"rag_context": "fresh"},
		},
		{
			name:     "append joins with a newline by default",
			steps:    `      - enrich: {key: rag_context, mode: append, value: "'Tenant: ' + string(metadata.tenant)"}`,
			metadata: map[string]any{"tenant": "acme", "rag_context": "Docs: quotes"},
			want:     map[string]any{"rag_context": "Docs: quotes\nTenant: acme"},
		},
		{
			name: "append with a separator",
			steps: `      - enrich: {key: tags, value: "'a'"}
      - enrich: {key: tags, mode: append, separator: ", ", value: "'b'"}
      - enrich: {key: tags, mode: append, separator: ", ", value: "'c'"}`,
			want: map[string]any{"tags": "a, b, c"},
		},
		{
			name:  "append to an absent key sets it",
			steps: `      - enrich: {key: rag_context, mode: append, value: "'only'"}`,
			want:  map[string]any{"rag_context": "only"},
		},
		{
			name: "set_if_absent keeps the present value",
			steps: `      - enrich: {key: k, value: "'kept'"}
      - enrich: {key: k, mode: set_if_absent, value: "'ignored'"}`,
			want: map[string]any{"k": "kept"},
		},
		{
			name:  "set_if_absent sets an absent key",
			steps: `      - enrich: {key: k, mode: set_if_absent, value: "'new'"}`,
			want:  map[string]any{"k": "new"},
		},
		{
			name:     "a structured value is stored as Go values",
			steps:    `      - enrich: {key: profile, value: "{'tenant': metadata.tenant, 'n': 2, 'tags': ['x', 'y']}"}`,
			metadata: map[string]any{"tenant": "acme"},
			want: map[string]any{"profile": map[string]any{
				"tenant": "acme", "n": int64(2), "tags": []any{"x", "y"},
			}},
		},
		{
			name: "a later step sees earlier enrichments",
			steps: `      - enrich: {key: a, value: "'one'"}
      - enrich: {key: b, value: "enrichments.a + '+two'"}`,
			want: map[string]any{"a": "one", "b": "one+two"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen := loadHooks(t, hooks(`hooks:
  - name: enricher
    stage: before_planning
    steps:
`+tt.steps+"\n"))
			r := runBefore(t, gen, "req-1", "price of ACME?", tt.metadata, noGate)
			if r.out != nil || r.err != nil {
				t.Fatalf("BeforePlanning = %+v, %v; want nil, nil", r.out, r.err)
			}
			wantInvocations(t, r.invs, 1)
			wantInvocation(t, r.invs[0], "enricher", engine.InvocationSucceeded, engine.ReasonNoDecision, "")
			got := r.pctx.Enrichments
			for k := range got {
				if _, promoted := tt.metadata[k]; promoted && tt.want[k] == nil {
					delete(got, k) // promoted and untouched
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("enrichments = %#v, want %#v", got, tt.want)
			}
		})
	}
}

// Every enrichment change is recorded as a planning_enrichment effect of the hook.
func TestEnrich_RecordsEnrichmentEffects(t *testing.T) {
	gen := loadHooks(t, hooks(`hooks:
  - name: enricher
    stage: before_planning
    steps:
      - enrich: {key: rag_context, mode: append, value: "'more'"}
      - enrich: {key: user_profile, value: "'vip'"}
`))
	r := runBefore(t, gen, "req-1", "hi", map[string]any{"rag_context": "base"}, noGate)
	wantInvocations(t, r.invs, 1)
	effects := r.invs[0].Effects
	if len(effects) != 2 {
		t.Fatalf("effects = %+v, want 2", effects)
	}
	want := []struct {
		id   string
		data map[string]any
	}{
		{"planning_enrichment:rag_context", map[string]any{"key": "rag_context", "operation": "updated", "before": "base", "after": "base\nmore"}},
		{"planning_enrichment:user_profile", map[string]any{"key": "user_profile", "operation": "added", "after": "vip"}},
	}
	for i, w := range want {
		var data map[string]any
		if err := json.Unmarshal(effects[i].Data, &data); err != nil {
			t.Fatalf("effect %d data %s: %v", i, effects[i].Data, err)
		}
		if effects[i].EffectID != w.id || !reflect.DeepEqual(data, w.data) {
			t.Errorf("effect %d = %s %v, want %s %v", i, effects[i].EffectID, data, w.id, w.data)
		}
	}
}

// A value that fails to evaluate is a hook error: the request goes on (fail open),
// the next hook runs, and the steps before the failing one keep their changes.
func TestEnrich_EvalErrorFailsOpen(t *testing.T) {
	gen := loadHooks(t, hooks(`hooks:
  - name: broken
    stage: before_planning
    steps:
      - enrich: {key: first, value: "'kept'"}
      - enrich: {key: tenant, value: "string(metadata.tenant)"}
  - name: next
    stage: before_planning
    steps:
      - enrich: {key: after, value: "'ran'"}
`))
	r := runBefore(t, gen, "req-1", "hi", nil, noGate)
	if r.out != nil || r.err != nil {
		t.Fatalf("BeforePlanning = %+v, %v; want nil, nil", r.out, r.err)
	}
	wantInvocations(t, r.invs, 2)
	wantInvocation(t, r.invs[0], "broken", engine.InvocationFailed, engine.ReasonHookError, "enrich tenant: ")
	if d := r.invs[0].Decision; d.FailurePolicy != engine.FailOpen || d.Action != engine.ActionContinue {
		t.Errorf("decision = %+v, want fail_open/continue", d)
	}
	wantInvocation(t, r.invs[1], "next", engine.InvocationSucceeded, engine.ReasonNoDecision, "")
	want := map[string]any{"first": "kept", "after": "ran"}
	if !reflect.DeepEqual(r.pctx.Enrichments, want) {
		t.Errorf("enrichments = %v, want %v", r.pctx.Enrichments, want)
	}
}

func TestShortCircuit_Authoritative(t *testing.T) {
	tests := []struct {
		name       string
		gate       engine.Gate
		params     string
		wantText   string
		wantSource string
	}{
		{
			name:       "default source",
			gate:       noGate,
			params:     `{response: "'Closed today, ' + string(metadata.tenant)"}`,
			wantText:   "Closed today, acme",
			wantSource: "short_circuit",
		},
		{
			name:       "custom source",
			gate:       noGate,
			params:     `{response: "'maintenance'", source: maintenance}`,
			wantText:   "maintenance",
			wantSource: "maintenance",
		},
		{
			name:       "accepted with cache reads disabled and reserved dimensions",
			gate:       engine.NewGate(map[string]string{"locale": "en"}, true),
			params:     `{response: "'no'"}`,
			wantText:   "no",
			wantSource: "short_circuit",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen := loadHooks(t, hooks(`hooks:
  - name: context
    stage: before_planning
    steps:
      - enrich: {key: rag_context, value: "'ctx'"}
  - name: closed
    stage: before_planning
    steps:
      - short_circuit: `+tt.params+`
      - enrich: {key: never, value: "'set'"}
  - name: later
    stage: before_planning
    steps:
      - enrich: {key: later, value: "'set'"}
`))
			r := runBefore(t, gen, "req-1", "hi", map[string]any{"tenant": "acme", "rag_context": "from metadata"}, tt.gate)
			if r.err != nil || r.out == nil {
				t.Fatalf("BeforePlanning = %+v, %v; want a short circuit", r.out, r.err)
			}
			want := engine.ShortCircuit{Response: tt.wantText, Source: tt.wantSource}
			if r.out.Hook != "closed" || r.out.Kind != engine.KindAuthoritative || r.out.Reason != engine.ReasonAuthoritative || r.out.ShortCircuit != want {
				t.Errorf("outcome = %+v, want hook closed, authoritative, %+v", r.out, want)
			}
			wantMeta := map[string]any{"tenant": "acme", "rag_context": "ctx"}
			if r.out.Response.Response != tt.wantText || r.out.Response.Confidence != 1.0 || !reflect.DeepEqual(r.out.Response.Metadata, wantMeta) {
				t.Errorf("response = %+v, want %q, confidence 1, metadata %v", r.out.Response, tt.wantText, wantMeta)
			}
			// The step after the short circuit and the later hook never ran.
			wantInvocations(t, r.invs, 2)
			wantInvocation(t, r.invs[1], "closed", engine.InvocationSucceeded, engine.ReasonAuthoritative, "")
			if _, ok := r.pctx.Enrichments["never"]; ok {
				t.Errorf("a step after the short circuit ran")
			}
		})
	}
}

// A response expression that fails is a hook error, not an answer.
func TestShortCircuit_EvalErrorFailsOpen(t *testing.T) {
	gen := loadHooks(t, hooks(`hooks:
  - name: closed
    stage: before_planning
    steps:
      - short_circuit: {response: "string(metadata.reason)"}
`))
	r := runBefore(t, gen, "req-1", "hi", nil, noGate)
	if r.out != nil || r.err != nil {
		t.Fatalf("BeforePlanning = %+v, %v; want nil, nil", r.out, r.err)
	}
	wantInvocations(t, r.invs, 1)
	wantInvocation(t, r.invs[0], "closed", engine.InvocationFailed, engine.ReasonHookError, "short_circuit response: ")
}
