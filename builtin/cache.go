package builtin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/engine/store"
)

func init() {
	cacheParams := []Param{
		{Name: "key", Type: celExpr(expr.String), Required: true, Doc: "the cache key, e.g. `request.lowerAscii().trim()`"},
		{Name: "vary", Type: celMap(expr.String), Doc: "extra dimensions that are part of the key, e.g. `{tenant: metadata.tenant}`"},
	}
	register(&Spec{
		Name: "cache.lookup",
		Summary: "Serves a cached response (a cache decision: only when cache reads are enabled and the entry's " +
			"reserved dimensions match the request's exactly). Entries are keyed by config generation and the request's reserved dimensions.",
		Stages: beforePlanning,
		Params: append(cacheParams[:2:2], Param{Name: "source", Type: text(), Default: "response_cache", Doc: "the short circuit's recorded source"}),
		Compile: func(p *Params) Action {
			return &cacheLookup{cacheKey: compileCacheKey(p), source: p.String("source"), cache: p.Services().Cache}
		},
	})
	register(&Spec{
		Name:          "cache.store",
		KeepsResponse: true,
		Summary:       "Stores the final response in the response cache, against the request's reserved dimensions.",
		Stages:        []engine.Stage{engine.StageAfterSynthesis},
		Params:        append(cacheParams[:2:2], Param{Name: "ttl", Type: duration(), Default: store.DefaultCacheTTL, Doc: "how long the entry is served"}),
		Compile: func(p *Params) Action {
			return &cacheStore{cacheKey: compileCacheKey(p), ttl: p.Duration("ttl"), cache: p.Services().Cache, now: p.Services().Now}
		},
	})
}

// cacheKey computes the storage key shared by cache.lookup and cache.store: a hash of
// the config generation, the key expression's value, the vary dimensions and the
// request's reserved dimensions (Gate.CacheVary, in name order, each after a 0x01 byte).
// Requests that differ only in a reserved dimension (e.g. two conversations with the
// same last question) therefore keep separate entries instead of evicting each other.
// A request without reserved dimensions keeps the earlier key format.
type cacheKey struct {
	key  *expr.Program
	vary []NamedProgram
}

func compileCacheKey(p *Params) cacheKey {
	return cacheKey{key: p.Expr("key"), vary: p.ExprMap("vary")}
}

func (c cacheKey) eval(ctx context.Context, s *State) (string, error) {
	key, err := c.key.EvalString(ctx, s.Vars())
	if err != nil {
		return "", fmt.Errorf("cache key: %w", err)
	}
	in := make([]byte, 0, 256)
	in = append(append(append(in, s.Info.Generation...), 0), key...)
	for _, v := range c.vary {
		val, err := v.Program.EvalString(ctx, s.Vars())
		if err != nil {
			return "", fmt.Errorf("cache vary %s: %w", v.Name, err)
		}
		in = append(append(append(append(in, 0), v.Name...), '='), val...)
	}
	if reserved := s.Info.Gate.CacheVary(); len(reserved) > 0 {
		for _, name := range slices.Sorted(maps.Keys(reserved)) {
			in = append(append(append(append(in, 1), name...), '='), reserved[name]...)
		}
	}
	sum := sha256.Sum256(in)
	var out [len(cachePrefix) + 2*sha256.Size]byte
	hex.Encode(out[copy(out[:], cachePrefix):], sum[:])
	return string(out[:]), nil
}

// cachePrefix starts every cache entry's storage key.
const cachePrefix = "cache:"

type cacheLookup struct {
	cacheKey
	source string
	cache  store.Cache
}

func (a *cacheLookup) Run(ctx context.Context, s *State) error {
	key, err := a.eval(ctx, s)
	if err != nil {
		return err
	}
	entry, ok, err := a.cache.GetCache(ctx, key)
	if err != nil || !ok {
		return err
	}
	s.Decision = &engine.ShortCircuitDecision{
		ShortCircuit:  &engine.ShortCircuit{Response: entry.Response, Source: a.source},
		Kind:          engine.KindCache,
		CachedAgainst: entry.CachedAgainst,
	}
	return nil
}

type cacheStore struct {
	cacheKey
	ttl   time.Duration
	cache store.Cache
	now   func() time.Time
}

// Run stores the final response, except for a request that failed or never had a plan
// accepted: its text was never reviewed as an answer, so it must not answer the next
// request with the same question. A skipped store is reported as a skipped effect.
func (a *cacheStore) Run(ctx context.Context, s *State) error {
	if s.Info.Failed || s.Info.Phase == 0 {
		why := "not stored: the request had no plan accepted (only an answer to a reviewed plan is cached; in a test, run an after_planning case on the same request_id first)"
		if s.Info.Failed {
			why = "not stored: the request failed"
		}
		return engine.ReportEffect(ctx, engine.Effect{
			EffectID: "cache.store", Name: "cache.store", Status: engine.EffectSkipped, StartedAt: a.now().UTC(), Summary: why,
		})
	}
	key, err := a.eval(ctx, s)
	if err != nil {
		return err
	}
	return a.cache.PutCache(ctx, key, store.CacheEntry{
		Response:      s.Response,
		Source:        "response_cache",
		CachedAgainst: s.Info.Gate.CacheVary(),
		StoredAt:      a.now().UTC(),
	}, a.ttl)
}
