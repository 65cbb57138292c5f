package inproc

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// beforeHook is one before_planning hook of the stage: a `when` condition, then either
// a cache.lookup (key and a tenant vary dimension) or an enrich.
type beforeHook struct {
	name, when string
	// cache.lookup
	cacheKey, varyTenant string
	// enrich
	key, value, mode string
}

// BeforeHooks is the number of hooks in the before_planning stage.
const BeforeHooks = 10

// beforeHooks is the stage: one cache lookup (a miss) and nine enrich hooks, two of
// whose conditions are false for the benchmark request.
var beforeHooks = [BeforeHooks]beforeHook{
	{name: "response-cache", when: `!has(metadata.no_cache)`,
		cacheKey: `request.lowerAscii().trim()`, varyTenant: `has(metadata.tenant) ? string(metadata.tenant) : ''`},
	{name: "tenant-context", when: `has(metadata.tenant)`,
		key: "rag_context", value: `'Tenant: ' + string(metadata.tenant)`, mode: "append"},
	{name: "user-profile", when: `has(metadata.user) && string(metadata.user).startsWith('u-')`,
		key: "user_profile", value: `'user ' + string(metadata.user)`, mode: "set"},
	{name: "intent", when: `request.contains('?') || request.lowerAscii().startsWith('quote')`,
		key: "intent", value: `'quote'`, mode: "set"},
	{name: "request-size", when: `size(request) > 0`,
		key: "request_chars", value: `size(request)`, mode: "set"},
	{name: "topic", when: `request.lowerAscii().contains('ticker')`,
		key: "topic", value: `'market-data'`, mode: "set"},
	{name: "history", when: `has(metadata.history)`,
		key: "conversation_history", value: `string(metadata.history)`, mode: "set"},
	{name: "locale", when: `!has(enrichments.locale)`,
		key: "locale", value: `has(metadata.locale) ? string(metadata.locale) : 'en'`, mode: "set_if_absent"},
	{name: "rag-locale", when: `has(enrichments.rag_context) && has(enrichments.locale)`,
		key: "rag_context", value: `'Locale: ' + string(enrichments.locale)`, mode: "append"},
	{name: "vip", when: `has(metadata.tier) && metadata.tier == 'gold'`,
		key: "priority", value: `'high'`, mode: "set"},
}

// beforeYAML renders the stage as a HookSet.
func beforeYAML() string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var b strings.Builder
	b.WriteString("apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: bench-before}\nhooks:\n")
	for _, h := range beforeHooks {
		fmt.Fprintf(&b, "  - name: %s\n    stage: before_planning\n    when: %s\n    steps:\n", h.name, q(h.when))
		if h.cacheKey != "" {
			fmt.Fprintf(&b, "      - cache.lookup: {key: %s, vary: {tenant: %s}}\n", q(h.cacheKey), q(h.varyTenant))
			continue
		}
		fmt.Fprintf(&b, "      - enrich: {key: %s, value: %s, mode: %s}\n", h.key, q(h.value), h.mode)
	}
	return b.String()
}

// beforeRequest is the request of every before_planning operation.
const beforeRequest = "Quote ticker ACME?"

func beforeMetadata() map[string]any {
	return map[string]any{"tenant": "acme", "user": "u-1", "locale": "en-GB", "tier": "gold"}
}

// AgentdBeforePlanning is agentd's side: the stage loaded by config.Load from dir
// (written here), Pipeline.BeforePlanning with a nil trail and a fresh enrichments map
// per operation. It returns the side and the enrichments one run produces.
func AgentdBeforePlanning(dir string) (Side, map[string]any, error) {
	if err := fixture.Write(dir, []fixture.File{{Name: "hooks/before.yaml", Data: []byte(beforeYAML())}}); err != nil {
		return Side{}, nil, err
	}
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		return Side{}, nil, fmt.Errorf("config.Load: %w", err)
	}
	if n := len(gen.StageHooks(engine.StageBeforePlanning)); n != BeforeHooks {
		return Side{}, nil, fmt.Errorf("loaded %d before_planning hooks, want %d", n, BeforeHooks)
	}
	gate := engine.NewGate(nil, false)
	ctx := engine.WithRequestInfo(context.Background(), engine.RequestInfo{ID: "req-bench", Generation: gen.ID, Gate: gate})
	md := beforeMetadata()
	run := func() (map[string]any, error) {
		pctx := &engine.PipelineContext{Request: beforeRequest, Metadata: md, Enrichments: make(map[string]any, 8)}
		out, err := gen.Pipeline.BeforePlanning(ctx, pctx, gate, nil)
		if err != nil || out != nil {
			return nil, fmt.Errorf("BeforePlanning = %v, %v; want no short circuit", out, err)
		}
		return pctx.Enrichments, nil
	}
	want, err := run()
	if err != nil {
		return Side{}, nil, err
	}
	return Side{Name: "agentd before_planning", Op: func() error {
		got, err := run()
		if err == nil && len(got) != len(want) {
			err = fmt.Errorf("enrichments = %v, want %v", got, want)
		}
		return err
	}}, want, nil
}

// rawHook is one hook as plain cel-go programs.
type rawHook struct {
	beforeHook
	when, value, cacheKey, vary cel.Program
}

// RawCELBeforePlanning is the baseline: the same expressions compiled with cel-go in an
// environment of the same variables and extensions (no cost limit, no iteration
// budget), evaluated with a map activation, with only the glue the stage needs: the
// enrichment writes and a Go map lookup of the cache key.
func RawCELBeforePlanning() (Side, map[string]any, error) {
	object := cel.MapType(cel.StringType, cel.DynType)
	env, err := cel.NewEnv(
		ext.Strings(), ext.Lists(), ext.Sets(), ext.Math(), ext.Encoders(), cel.CrossTypeNumericComparisons(true),
		cel.Variable("request", cel.StringType), cel.Variable("metadata", object),
		cel.Variable("enrichments", object), cel.Variable("now", cel.TimestampType),
	)
	if err != nil {
		return Side{}, nil, err
	}
	compile := func(src string) (cel.Program, error) {
		if src == "" {
			return nil, nil
		}
		ast, iss := env.Compile(src)
		if iss.Err() != nil {
			return nil, iss.Err()
		}
		return env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	}
	hooks := make([]rawHook, len(beforeHooks))
	for i, h := range beforeHooks {
		r := rawHook{beforeHook: h}
		for _, p := range []struct {
			dst *cel.Program
			src string
		}{{&r.when, h.when}, {&r.value, h.value}, {&r.cacheKey, h.cacheKey}, {&r.vary, h.varyTenant}} {
			if *p.dst, err = compile(p.src); err != nil {
				return Side{}, nil, fmt.Errorf("%s: %w", h.name, err)
			}
		}
		hooks[i] = r
	}
	cache := map[string]string{}
	md := beforeMetadata()
	run := func() (map[string]any, error) {
		enrichments := make(map[string]any, 8)
		vars := map[string]any{"request": beforeRequest, "metadata": md, "enrichments": enrichments}
		for _, h := range hooks {
			ok, _, err := h.when.Eval(vars)
			if err != nil {
				return nil, fmt.Errorf("%s when: %w", h.name, err)
			}
			if ok != types.True {
				continue
			}
			if h.cacheKey != nil {
				key, _, err := h.cacheKey.Eval(vars)
				if err != nil {
					return nil, err
				}
				tenant, _, err := h.vary.Eval(vars)
				if err != nil {
					return nil, err
				}
				if hit, found := cache[key.Value().(string)+"\x00tenant="+tenant.Value().(string)]; found {
					return nil, fmt.Errorf("unexpected cache hit %q", hit)
				}
				continue
			}
			v, _, err := h.value.Eval(vars)
			if err != nil {
				return nil, fmt.Errorf("%s value: %w", h.name, err)
			}
			val := v.Value()
			current, present := enrichments[h.key]
			switch {
			case h.mode == "set_if_absent" && present:
				continue
			case h.mode == "append" && present:
				if prev := fmt.Sprint(current); prev != "" {
					val = prev + "\n" + fmt.Sprint(val)
				}
			}
			enrichments[h.key] = val
		}
		return enrichments, nil
	}
	want, err := run()
	if err != nil {
		return Side{}, nil, err
	}
	return Side{Name: "raw CEL before_planning", Op: func() error {
		got, err := run()
		if err == nil && len(got) != len(want) {
			err = fmt.Errorf("enrichments = %v, want %v", got, want)
		}
		return err
	}}, want, nil
}

// SameEnrichments reports whether the two sides produce the same enrichments.
func SameEnrichments(a, b map[string]any) error {
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("agentd enrichments %v differ from raw CEL's %v", a, b)
	}
	return nil
}
