package builtin

import (
	"log/slog"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/expr"
)

// compileStep compiles one step of a hook in stage without the schema in front, as an
// embedder calling CompileStep would: what it reports comes from the declarations alone.
func compileStep(t *testing.T, stage engine.Stage, step string) (Action, diag.List) {
	t.Helper()
	src := NewSource("hooks/t.yaml", []byte(step))
	var doc yaml.Node
	if err := yaml.Unmarshal(src.Data, &doc); err != nil {
		t.Fatal(err)
	}
	cel, err := expr.NewCompiler(expr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var errs diag.List
	c := &Context{Stage: stage, Hook: "h", CEL: cel, RegoFailed: true, Services: Services{}.WithDefaults(), Source: src, Errors: &errs}
	return CompileStep(c, doc.Content[0], "steps[0]"), errs
}

// An absent param is its declared default in the compiled action.
func TestParams_DefaultsAreTheDeclarations(t *testing.T) {
	tests := []struct {
		stage       engine.Stage
		step, param string
		got         func(Action) any
	}{
		{engine.StageBeforePlanning, `enrich: {key: k, value: "1"}`, "mode", func(a Action) any { return a.(*enrich).mode }},
		{engine.StageBeforePlanning, `enrich: {key: k, value: "1"}`, "separator", func(a Action) any { return a.(*enrich).separator }},
		{engine.StageBeforePlanning, `short_circuit: {response: "'r'"}`, "source", func(a Action) any { return a.(*shortCircuit).source }},
		{engine.StageBeforePlanning, `cache.lookup: {key: request}`, "source", func(a Action) any { return a.(*cacheLookup).source }},
		{engine.StageAfterSynthesis, `cache.store: {key: request}`, "ttl", func(a Action) any { return a.(*cacheStore).ttl }},
		{engine.StageBeforePlanning, `http.retrieve: {url: "http://x/", key: k}`, "method", func(a Action) any { return a.(*retrieve).method }},
		{engine.StageBeforePlanning, `http.retrieve: {url: "http://x/", key: k}`, "timeout", func(a Action) any { return a.(*retrieve).timeout }},
		{engine.StageBeforePlanning, `http.retrieve: {url: "http://x/", key: k}`, "max_bytes", func(a Action) any { return int(a.(*retrieve).maxBytes) }},
		{engine.StageBeforePlanning, `http.retrieve: {url: "http://x/", key: k}`, "block_private", func(a Action) any { return a.(*retrieve).blockPrivate }},
		{engine.StageBeforePlanning, `rate_limit: {key: "'k'", limit: 1, window: 1m}`, "response", func(a Action) any { return a.(*rateLimit).response }},
		{engine.StageBeforePlanning, `rate_limit: {key: "'k'", limit: 1, window: 1m}`, "on_key_error", func(a Action) any {
			if a.(*rateLimit).denyOnKeyError {
				return "deny"
			}
			return "allow"
		}},
		{engine.StageAfterSynthesis, `redact: {patterns: [email]}`, "replacement", func(a Action) any { return a.(*redact).replacement }},
		{engine.StageAfterSynthesis, `truncate: {max_bytes: 10}`, "suffix", func(a Action) any { return a.(*truncate).suffix }},
		{engine.StageAfterExecution, `effect: {id: e}`, "status", func(a Action) any { return string(a.(*effect).status) }},
		{engine.StageAfterExecution, `log: {message: "'m'"}`, "level", func(a Action) any { return strings.ToLower(a.(*logLine).level.String()) }},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		name := strings.SplitN(tt.step, ":", 2)[0]
		t.Run(name+"."+tt.param, func(t *testing.T) {
			a, errs := compileStep(t, tt.stage, tt.step)
			if a == nil {
				t.Fatalf("compile: %v", errs)
			}
			spec, _ := Lookup(name)
			decl, _ := spec.param(tt.param)
			if got := tt.got(a); got != decl.Default {
				t.Errorf("%s = %#v, want the declared default %#v", tt.param, got, decl.Default)
			}
		})
		covered[name+"."+tt.param] = true
	}
	for _, name := range Names() {
		spec, _ := Lookup(name)
		for _, p := range spec.Params {
			if p.Default != nil && !covered[name+"."+p.Name] && name != "rego" {
				t.Errorf("no case for the default of %s.%s", name, p.Name)
			}
		}
	}
}

// Without the schema in front, the accessors still hold params to their declarations.
func TestParams_CheckedAgainstTheDeclarations(t *testing.T) {
	tests := []struct {
		stage      engine.Stage
		step, want string
	}{
		{engine.StageBeforePlanning, `enrich: {key: "", value: "1"}`, `"key" must not be empty`},
		{engine.StageBeforePlanning, `enrich: {key: k, value: "1", mode: merge}`, `"mode" must be one of set, append, set_if_absent, got "merge"`},
		{engine.StageBeforePlanning, `enrich: {key: [k], value: "1"}`, `"key" must be a string`},
		{engine.StageAfterSynthesis, `truncate: {max_bytes: 0}`, `"max_bytes" must be at least 1, got 0`},
		{engine.StageAfterSynthesis, `truncate: {max_bytes: ten}`, `"max_bytes" must be an integer`},
		{engine.StageAfterSynthesis, `redact: {patterns: [email, zip]}`, `unknown patterns "zip" (known: email, phone, credit_card, ssn, ipv4)`},
		{engine.StageAfterSynthesis, `redact: {patterns: []}`, `"patterns" must be a non-empty list of strings`},
		{engine.StageAfterSynthesis, `redact: {regex: [""]}`, `"regex" must be a list of non-empty strings`},
		{engine.StageAfterSynthesis, `redact: {replacement: x}`, `"redact" needs param "patterns" or "regex"`},
		{engine.StageBeforePlanning, `http.retrieve: {url: "http://x/", key: k, headers: {a: [1]}}`, `"headers" must be a mapping of strings`},
		{engine.StageAfterSynthesis, `cache.store: {key: request, ttl: 0s}`, `"ttl" must be a positive duration`},
		{engine.StageAfterPlanning, `rego: {query: data.x, memo: maybe}`, `"memo" must be true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.step, func(t *testing.T) {
			a, errs := compileStep(t, tt.stage, tt.step)
			if a != nil || len(errs) != 1 || errs[0].Kind != diag.KindInvalidParams || !strings.Contains(errs[0].Message, tt.want) {
				t.Errorf("compile = %v, %v; want one invalid_params error containing %q", a, errs, tt.want)
			}
		})
	}
}

// Reading a param the action did not declare, or as another kind, is a programming error.
func TestParams_ReadAsDeclared(t *testing.T) {
	spec := &Spec{Name: "probe", Params: []Param{{Name: "x", Type: text(), Doc: "x"}}}
	p := &Params{spec: spec, values: map[string]*yaml.Node{}}
	for name, read := range map[string]func(){
		"undeclared":   func() { p.String("y") },
		"another kind": func() { p.Int("x") },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), `action probe reads param`) {
					t.Errorf("recover() = %v, want a panic naming the action", r)
				}
			}()
			read()
		})
	}
	if got := p.String("x"); got != "" {
		t.Errorf("String(x) = %q", got)
	}
}

func TestSpec_CheckRejectsContradictions(t *testing.T) {
	tests := []struct {
		name   string
		params []Param
		any    []string
		want   string
	}{
		{"no doc", []Param{{Name: "a", Type: text()}}, nil, "no doc"},
		{"duplicate", []Param{{Name: "a", Type: text(), Doc: "d"}, {Name: "a", Type: text(), Doc: "d"}}, nil, "duplicate param a"},
		{"unknown kind", []Param{{Name: "a", Doc: "d"}}, nil, `unknown kind ""`},
		{"enum without values", []Param{{Name: "a", Type: enum(), Doc: "d"}}, nil, "without values"},
		{"required with default", []Param{{Name: "a", Type: text(), Required: true, Default: "x", Doc: "d"}}, nil, "required with a default"},
		{"default of another type", []Param{{Name: "a", Type: integer(1), Default: "1", Doc: "d"}}, nil, "not a valid integer"},
		{"default below minimum", []Param{{Name: "a", Type: integer(1), Default: 0, Doc: "d"}}, nil, "not a valid integer"},
		{"default outside enum", []Param{{Name: "a", Type: enum("x"), Default: "y", Doc: "d"}}, nil, "not a valid enum"},
		{"duration default of another type", []Param{{Name: "a", Type: duration(), Default: slog.LevelInfo, Doc: "d"}}, nil, "not a valid duration"},
		{"RequireAny unknown", []Param{{Name: "a", Type: text(), Doc: "d"}}, []string{"b"}, "unknown param b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Spec{Name: "probe", Params: tt.params, RequireAny: tt.any}).check()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("check() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
