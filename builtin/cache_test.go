package builtin_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// cacheHooks is the stock-agent cache pair: lookup before planning and store after
// synthesis, keyed by the normalized request and varied by tenant.
var cacheHooks = hooks(`hooks:
  - name: response-cache
    stage: before_planning
    steps:
      - cache.lookup:
          key: request.lowerAscii().trim()
          vary: {tenant: "has(metadata.tenant) ? string(metadata.tenant) : ''"}
  - name: response-cache-store
    stage: after_synthesis
    steps:
      - cache.store:
          key: request.lowerAscii().trim()
          vary: {tenant: "has(metadata.tenant) ? string(metadata.tenant) : ''"}
`)

// cacheRequest is one side of a store-then-lookup case.
type cacheRequest struct {
	text     string
	metadata map[string]any
	gate     engine.Gate
}

func TestCacheStore_ThenLookup(t *testing.T) {
	acme := map[string]any{"tenant": "acme"}
	en := engine.NewGate(map[string]string{"locale": "en"}, false)
	stored := cacheRequest{text: "Price of ACME?", metadata: acme, gate: en}
	tests := []struct {
		name string
		// otherGeneration looks up on a second generation (one changed file) that
		// shares the cache.
		otherGeneration bool
		lookup          cacheRequest
		wantReason      engine.Reason
		wantHit         bool
	}{
		{
			name:       "same request hits",
			lookup:     stored,
			wantReason: engine.ReasonCacheMatch,
			wantHit:    true,
		},
		{
			name:       "the key expression normalizes the text",
			lookup:     cacheRequest{text: "  price of acme?  ", metadata: acme, gate: en},
			wantReason: engine.ReasonCacheMatch,
			wantHit:    true,
		},
		{
			name:       "another request misses",
			lookup:     cacheRequest{text: "Price of INIT?", metadata: acme, gate: en},
			wantReason: engine.ReasonNoDecision,
		},
		{
			name:            "a generation change misses",
			otherGeneration: true,
			lookup:          stored,
			wantReason:      engine.ReasonNoDecision,
		},
		{
			name:       "a vary dimension change misses",
			lookup:     cacheRequest{text: stored.text, metadata: map[string]any{"tenant": "globex"}, gate: en},
			wantReason: engine.ReasonNoDecision,
		},
		{
			name:       "a vary dimension turning absent misses",
			lookup:     cacheRequest{text: stored.text, gate: en},
			wantReason: engine.ReasonNoDecision,
		},
		{
			// Reserved dimensions are part of the storage key: another value is another
			// entry (a miss), never the stored entry refused as a mismatch.
			name:       "a reserved dimension change misses",
			lookup:     cacheRequest{text: stored.text, metadata: acme, gate: engine.NewGate(map[string]string{"locale": "fr"}, false)},
			wantReason: engine.ReasonNoDecision,
		},
		{
			name:       "a reserved dimension on one side only misses",
			lookup:     cacheRequest{text: stored.text, metadata: acme, gate: engine.NewGate(map[string]string{"locale": "en", "region": "eu"}, false)},
			wantReason: engine.ReasonNoDecision,
		},
		{
			name:       "cache reads disabled",
			lookup:     cacheRequest{text: stored.text, metadata: acme, gate: engine.NewGate(map[string]string{"locale": "en"}, true)},
			wantReason: engine.ReasonCacheReadDisabled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := config.Options{Services: builtin.Services{Cache: store.NewMemory(store.MemoryOptions{})}}
			gen := loadHooks(t, cacheHooks, opts)
			resp, invs := runSynthesis(t, gen, requestCtx(gen, "req-store", stored.gate), stored.text, stored.metadata, "ACME trades at 42.")
			if resp != "ACME trades at 42." {
				t.Fatalf("AfterSynthesis = %q, want the response unchanged", resp)
			}
			wantInvocations(t, invs, 1)
			wantInvocation(t, invs[0], "response-cache-store", engine.InvocationSucceeded, engine.ReasonCompleted, "")

			lookupGen := gen
			if tt.otherGeneration {
				lookupGen = loadHooks(t, cacheHooks+"# changed\n", opts)
				if lookupGen.ID == gen.ID {
					t.Fatalf("generation ids are equal: %s", gen.ID)
				}
			}
			r := runBefore(t, lookupGen, "req-lookup", tt.lookup.text, tt.lookup.metadata, tt.lookup.gate)
			if r.err != nil {
				t.Fatalf("BeforePlanning error: %v", r.err)
			}
			wantInvocations(t, r.invs, 1)
			wantInvocation(t, r.invs[0], "response-cache", engine.InvocationSucceeded, tt.wantReason, "")
			if tt.wantReason != engine.ReasonNoDecision && r.invs[0].Decision.FailurePolicy != engine.FailClosed {
				t.Errorf("decision = %+v, want fail_closed", r.invs[0].Decision)
			}
			if !tt.wantHit {
				if r.out != nil {
					t.Errorf("outcome = %+v, want none", r.out)
				}
				return
			}
			if r.out == nil {
				t.Fatal("no short circuit, want a cache hit")
			}
			want := engine.ShortCircuit{Response: "ACME trades at 42.", Source: "response_cache"}
			if r.out.Kind != engine.KindCache || r.out.ShortCircuit != want {
				t.Errorf("outcome = %+v, want a cache short circuit %+v", r.out, want)
			}
			// The entry carries the reserved dimensions of the storing request's gate.
			if !maps.Equal(r.out.CachedAgainst, map[string]string{"locale": "en"}) {
				t.Errorf("cached_against = %v, want the storing gate's {locale: en}", r.out.CachedAgainst)
			}
		})
	}
}

// cached_against is what the entry was stored against, never the lookup's gate echoed
// back: an entry stored without reserved dimensions is not found by a gate that has one
// (the reserved dimensions are part of the storage key, so it is a miss; the engine's
// cache_dimension_mismatch check stays for cache decisions from other hooks).
func TestCacheStore_CachedAgainstIsTheStoringGate(t *testing.T) {
	gen := loadHooks(t, cacheHooks)
	runSynthesis(t, gen, requestCtx(gen, "req-store", noGate), "q", nil, "answer")

	r := runBefore(t, gen, "req-lookup", "q", nil, engine.NewGate(map[string]string{"locale": "en"}, false))
	wantInvocations(t, r.invs, 1)
	wantInvocation(t, r.invs[0], "response-cache", engine.InvocationSucceeded, engine.ReasonNoDecision, "")
	if r.out != nil {
		t.Errorf("outcome = %+v, want none", r.out)
	}

	r = runBefore(t, gen, "req-lookup-2", "q", nil, noGate)
	if r.out == nil || r.out.Reason != engine.ReasonCacheMatch || r.out.CachedAgainst != nil {
		t.Errorf("outcome = %+v, want a cache match with no cached_against", r.out)
	}
}

// cache.store stores the response as it is at its place in the after_synthesis chain,
// with the source and the ttl it is given.
func TestCacheStore_StoresTheChainedResponse(t *testing.T) {
	mem := store.NewMemory(store.MemoryOptions{})
	gen := loadHooks(t, hooks(`hooks:
  - name: lookup
    stage: before_planning
    steps:
      - cache.lookup: {key: request, source: my_cache}
  - name: redact
    stage: after_synthesis
    steps:
      - redact: {patterns: [email]}
  - name: store
    stage: after_synthesis
    steps:
      - cache.store: {key: request, ttl: 60m}
  - name: short-lived
    stage: after_synthesis
    steps:
      - cache.store: {key: "'short:' + request", ttl: 1ms}
`), config.Options{Services: builtin.Services{Cache: mem}})
	got, invs := runSynthesis(t, gen, requestCtx(gen, "req-1", noGate), "contact?", nil, "Write to ann@example.com.")
	if got != "Write to [REDACTED]." {
		t.Fatalf("AfterSynthesis = %q", got)
	}
	wantInvocations(t, invs, 3)

	r := runBefore(t, gen, "req-2", "contact?", nil, noGate)
	want := engine.ShortCircuit{Response: "Write to [REDACTED].", Source: "my_cache"}
	if r.out == nil || r.out.ShortCircuit != want {
		t.Fatalf("outcome = %+v, want %+v", r.out, want)
	}

	time.Sleep(20 * time.Millisecond)
	r = runBefore(t, gen, "req-3", "short:contact?", nil, noGate)
	if r.out != nil {
		t.Errorf("outcome = %+v, want the 1ms entry expired", r.out)
	}
}

// A request that failed or never had a plan accepted does not feed the cache: its
// response was never reviewed as an answer. The skip is a skipped effect in the record.
func TestHardening_RefusedRequestNeverFeedsTheCache(t *testing.T) {
	mem := store.NewMemory(store.MemoryOptions{})
	gen := loadHooks(t, hooks(`hooks:
  - name: lookup
    stage: before_planning
    steps:
      - cache.lookup: {key: request}
  - name: store
    stage: after_synthesis
    steps:
      - cache.store: {key: request}
`), config.Options{Services: builtin.Services{Cache: mem}})
	for name, info := range map[string]engine.RequestInfo{
		"no accepted plan": {ID: "r-unplanned", Generation: gen.ID, Gate: noGate},
		"failed":           {ID: "r-failed", Generation: gen.ID, Gate: noGate, Phase: 1, Failed: true},
	} {
		_, invs := runSynthesis(t, gen, engine.WithRequestInfo(context.Background(), info), "the question", nil, "an answer nobody reviewed")
		if len(invs) != 1 || len(invs[0].Effects) != 1 || invs[0].Effects[0].Status != engine.EffectSkipped {
			t.Fatalf("%s: invocations %+v, want one skipped cache.store effect", name, invs)
		}
		if r := runBefore(t, gen, "next", "the question", nil, noGate); r.out != nil {
			t.Fatalf("%s: the next request was answered from the cache: %+v", name, r.out)
		}
	}
}

// A key that fails to evaluate is a hook error on both sides: lookup fails open, and
// store keeps the response.
func TestCacheLookup_KeyErrorFailsOpen(t *testing.T) {
	gen := loadHooks(t, hooks(`hooks:
  - name: lookup
    stage: before_planning
    steps:
      - cache.lookup: {key: "string(metadata.missing)"}
  - name: store
    stage: after_synthesis
    steps:
      - cache.store: {key: request, vary: {user: "string(metadata.user)"}}
`))
	r := runBefore(t, gen, "req-1", "q", nil, noGate)
	if r.out != nil || r.err != nil {
		t.Fatalf("BeforePlanning = %+v, %v", r.out, r.err)
	}
	wantInvocations(t, r.invs, 1)
	wantInvocation(t, r.invs[0], "lookup", engine.InvocationFailed, engine.ReasonHookError, "cache key: ")

	got, invs := runSynthesis(t, gen, requestCtx(gen, "req-1", noGate), "q", nil, "answer")
	if got != "answer" {
		t.Errorf("AfterSynthesis = %q, want the response unchanged", got)
	}
	wantInvocations(t, invs, 1)
	wantInvocation(t, invs[0], "store", engine.InvocationFailed, engine.ReasonHookError, "cache vary user: ")
}

// TestCacheKey_FormatIsStable: entries stored by earlier versions (in Redis, shared by
// replicas) stay readable: an entry's key is "cache:" and the hex SHA-256 of the
// generation, NUL, the key expression's value and, per vary dimension in name order,
// NUL, its name, "=" and its value.
func TestCacheKey_FormatIsStable(t *testing.T) {
	cache := store.NewMemory(store.MemoryOptions{})
	gen := loadHooks(t, cacheHooks, config.Options{Services: builtin.Services{Cache: cache}})
	gate := engine.NewGate(nil, false)
	runSynthesis(t, gen, requestCtx(gen, "req-store", gate), "  Price of ACME? ", map[string]any{"tenant": "acme"}, "ACME trades at 42.")
	sum := sha256.Sum256([]byte(gen.ID + "\x00price of acme?\x00tenant=acme"))
	entry, ok, err := cache.GetCache(context.Background(), "cache:"+hex.EncodeToString(sum[:]))
	if err != nil || !ok || entry.Response != "ACME trades at 42." {
		t.Fatalf("entry under the stable key: %+v, %v, %v", entry, ok, err)
	}
}

// TestCacheStore_ReservedDimensionsKeepSeparateEntries: two requests with the same key
// text but different reserved dimensions (two gateway conversations ending in the same
// question) store two entries; neither evicts the other, and each is served its own.
func TestCacheStore_ReservedDimensionsKeepSeparateEntries(t *testing.T) {
	opts := config.Options{Services: builtin.Services{Cache: store.NewMemory(store.MemoryOptions{})}}
	gen := loadHooks(t, cacheHooks, opts)
	acme := map[string]any{"tenant": "acme"}
	one := engine.NewGate(map[string]string{"conversation": "c1"}, false)
	two := engine.NewGate(map[string]string{"conversation": "c2"}, false)
	runSynthesis(t, gen, requestCtx(gen, "req-1", one), "Price of ACME?", acme, "answer one")
	runSynthesis(t, gen, requestCtx(gen, "req-2", two), "Price of ACME?", acme, "answer two")
	for _, tc := range []struct {
		gate engine.Gate
		want string
	}{{one, "answer one"}, {two, "answer two"}} {
		r := runBefore(t, gen, "req-lookup", "Price of ACME?", acme, tc.gate)
		if r.err != nil || r.out == nil {
			t.Fatalf("lookup %v: out %+v, err %v, want a hit", tc.gate.CacheVary(), r.out, r.err)
		}
		if r.out.ShortCircuit.Response != tc.want || !maps.Equal(r.out.CachedAgainst, tc.gate.CacheVary()) {
			t.Errorf("lookup %v = %q against %v, want %q", tc.gate.CacheVary(), r.out.ShortCircuit.Response, r.out.CachedAgainst, tc.want)
		}
	}
}
