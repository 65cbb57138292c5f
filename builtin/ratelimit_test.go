package builtin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

func TestRateLimit_LimitThenShortCircuit(t *testing.T) {
	tests := []struct {
		name     string
		params   string
		gate     engine.Gate
		wantText string
	}{
		{"default response", `{key: "string(metadata.tenant)", limit: 2, window: 1m}`, noGate, "rate limit exceeded"},
		{"custom response", `{key: "string(metadata.tenant)", limit: 2, window: 1m, response: slow down}`, noGate, "slow down"},
		{"authoritative with cache reads disabled", `{key: "string(metadata.tenant)", limit: 2, window: 1m}`, engine.NewGate(map[string]string{"locale": "en"}, true), "rate limit exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen := loadHooks(t, hooks(`hooks:
  - name: limit
    stage: before_planning
    steps:
      - rate_limit: `+tt.params+`
  - name: after
    stage: before_planning
    steps:
      - enrich: {key: after, value: "'ran'"}
`))
			acme := map[string]any{"tenant": "acme"}
			for i := range 2 {
				r := runBefore(t, gen, "req", "q", acme, tt.gate)
				if r.out != nil || r.err != nil {
					t.Fatalf("request %d: BeforePlanning = %+v, %v; want it within the limit", i+1, r.out, r.err)
				}
				wantInvocation(t, r.invs[0], "limit", engine.InvocationSucceeded, engine.ReasonNoDecision, "")
			}
			r := runBefore(t, gen, "req", "q", acme, tt.gate)
			if r.err != nil || r.out == nil {
				t.Fatalf("request 3: BeforePlanning = %+v, %v; want a short circuit", r.out, r.err)
			}
			want := engine.ShortCircuit{Response: tt.wantText, Source: "rate_limit"}
			if r.out.Kind != engine.KindAuthoritative || r.out.Reason != engine.ReasonAuthoritative || r.out.ShortCircuit != want {
				t.Errorf("outcome = %+v, want authoritative %+v", r.out, want)
			}
			wantInvocations(t, r.invs, 1) // the later hook is skipped
			wantInvocation(t, r.invs[0], "limit", engine.InvocationSucceeded, engine.ReasonAuthoritative, "")

			// Another key has its own count.
			r = runBefore(t, gen, "req", "q", map[string]any{"tenant": "globex"}, tt.gate)
			if r.out != nil {
				t.Errorf("another tenant: outcome = %+v, want none", r.out)
			}
		})
	}
}

// Counts are per hook and per fixed window.
func TestRateLimit_WindowsAndHooks(t *testing.T) {
	gen := loadHooks(t, hooks(`hooks:
  - name: burst
    stage: before_planning
    steps:
      - rate_limit: {key: "'all'", limit: 1, window: 50ms, response: burst}
  - name: daily
    stage: before_planning
    steps:
      - rate_limit: {key: "'all'", limit: 2, window: 10m, response: daily}
`))
	answer := func() string {
		r := runBefore(t, gen, "req", "q", nil, noGate)
		if r.out == nil {
			return ""
		}
		return r.out.ShortCircuit.Response
	}
	if got := answer(); got != "" {
		t.Fatalf("request 1 = %q, want through", got)
	}
	if got := answer(); got != "burst" {
		t.Fatalf("request 2 = %q, want burst", got)
	}
	time.Sleep(60 * time.Millisecond)
	// A new burst window; the daily hook counts its second request.
	if got := answer(); got != "" {
		t.Fatalf("request 3 = %q, want through", got)
	}
	time.Sleep(60 * time.Millisecond)
	if got := answer(); got != "daily" {
		t.Fatalf("request 4 = %q, want daily", got)
	}
}

// A key that fails to evaluate answers the request as limited (fail closed) and says so
// in a failed effect; on_key_error: allow keeps the request going as a hook error.
func TestHardening_RateLimitKeyErrorFailsClosed(t *testing.T) {
	for _, tc := range []struct{ onKeyError string }{{""}, {"deny"}, {"allow"}} {
		t.Run("on_key_error="+tc.onKeyError, func(t *testing.T) {
			param := ""
			if tc.onKeyError != "" {
				param = ", on_key_error: " + tc.onKeyError
			}
			gen := loadHooks(t, hooks(`hooks:
  - name: limit
    stage: before_planning
    steps:
      - rate_limit: {key: "string(metadata.tenant)", limit: 1, window: 1m`+param+`}
`))
			r := runBefore(t, gen, "req", "q", nil, noGate)
			if tc.onKeyError == "allow" {
				if r.out != nil || r.err != nil {
					t.Fatalf("BeforePlanning = %+v, %v, want the request through", r.out, r.err)
				}
				wantInvocation(t, r.invs[0], "limit", engine.InvocationFailed, engine.ReasonHookError, "rate_limit key: ")
				return
			}
			if r.out == nil || r.out.ShortCircuit.Source != "rate_limit" || r.err != nil {
				t.Fatalf("BeforePlanning = %+v, %v, want the limit's answer", r.out, r.err)
			}
			effects := r.invs[0].Effects
			if len(effects) != 1 || effects[0].Status != engine.EffectFailed || !strings.Contains(effects[0].Error, "rate_limit key: ") {
				t.Fatalf("effects = %+v, want the failed key", effects)
			}
		})
	}
}
