package policy

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine/diag"
)

// where is the part of a diagnostic the tests assert: never the message.
type where struct {
	Kind         diag.Kind
	File         string
	Line, Column int
}

func wheres(es diag.List) []where {
	out := make([]where, len(es))
	for i, e := range es {
		out[i] = where{e.Kind, e.File, e.Line, e.Column}
	}
	return out
}

func TestCompileErrors(t *testing.T) {
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		modules []Module
		data    []DataFile
		want    []where
		mention string // a word the first message must contain
	}{{
		name:    string(diag.KindRegoParse),
		modules: []Module{{File: "bad.rego", Source: []byte("package bad\n\nallow if input.x = = 1\n")}},
		want:    []where{{diag.KindRegoParse, "bad.rego", 3, 20}},
	}, {
		// OPA's parser accepts this head (its compiler then panics); the ":=" form it refuses.
		name:    string(diag.KindRegoParse) + "/call_in_rule_head",
		modules: []Module{{File: "head.rego", Source: []byte("package head\n\nf(xs).A if {\n\t0\n}\n")}},
		want:    []where{{diag.KindRegoParse, "head.rego", 3, 1}},
		mention: "invalid rule head",
	}, {
		name:    string(diag.KindRegoParse) + "/empty",
		modules: []Module{{File: "empty.rego", Source: []byte("# nothing\n")}},
		want:    []where{{diag.KindRegoParse, "empty.rego", 0, 0}},
	}, {
		name:    string(diag.KindRegoCompile) + "/unsafe_var",
		modules: []Module{{File: "unsafe.rego", Source: []byte("package u\n\np if {\n\tx := y\n\tx == 1\n}\n")}},
		want:    []where{{diag.KindRegoCompile, "unsafe.rego", 4, 2}},
		mention: "unsafe",
	}, {
		name:    string(diag.KindRegoCompile) + "/undefined_function",
		modules: []Module{{File: "f.rego", Source: []byte("package f\n\np if foo.bar(1)\n")}},
		want:    []where{{diag.KindRegoCompile, "f.rego", 3, 6}},
		mention: "foo.bar",
	}, {
		name:    string(diag.KindRegoCompile) + "/duplicate_file",
		modules: []Module{{File: "a.rego", Source: []byte("package a\n")}, {File: "a.rego", Source: []byte("package b\n")}},
		want:    []where{{diag.KindRegoCompile, "a.rego", 0, 0}},
	}, {
		name:    string(diag.KindRegoUnsafeBuiltin) + "/http.send",
		modules: []Module{{File: "h.rego", Source: []byte("package h\n\nr := http.send({\"method\": \"get\", \"url\": \"https://example.com\"})\n")}},
		want:    []where{{diag.KindRegoUnsafeBuiltin, "h.rego", 3, 6}},
		mention: "http.send",
	}, {
		name: string(diag.KindRegoUnsafeBuiltin) + "/net.lookup_ip_addr",
		modules: []Module{{File: "n.rego", Source: []byte(
			"package n\n\nips contains ip if {\n\tsome ip in net.lookup_ip_addr(\"example.com\")\n}\n")}},
		want:    []where{{diag.KindRegoUnsafeBuiltin, "n.rego", 4, 13}},
		mention: "net.lookup_ip_addr",
	}, {
		name: string(diag.KindRegoUnsafeBuiltin) + "/reported_despite_parse_error_elsewhere",
		modules: []Module{
			{File: "n.rego", Source: []byte("package n\n\np if net.cidr_contains(\"10.0.0.0/8\", input.ip)\n")},
			{File: "bad.rego", Source: []byte("package bad\n\nallow if input.x = = 1\n")},
		},
		want: []where{{diag.KindRegoParse, "bad.rego", 3, 20}, {diag.KindRegoUnsafeBuiltin, "n.rego", 3, 6}},
	}, {
		name: string(diag.KindDataConflict) + "/same_path_different_values",
		data: []DataFile{
			{File: "a.json", Value: obj("limits", obj("max_steps", 2))},
			{File: "b.json", Path: []string{"limits"}, Value: obj("max_steps", 3)},
			{File: "c.json", Path: []string{"limits"}, Value: obj("max_steps", 2.0)},
		},
		want:    []where{{diag.KindDataConflict, "b.json", 0, 0}},
		mention: "a.json",
	}, {
		name: string(diag.KindDataConflict) + "/path_below_a_value",
		data: []DataFile{
			{File: "a.json", Path: []string{"agentd", "allowlist"}, Value: []any{"x"}},
			{File: "b.json", Path: []string{"agentd", "allowlist", "demo-tools"}, Value: obj()},
		},
		want: []where{{diag.KindDataConflict, "b.json", 0, 0}},
	}, {
		name: string(diag.KindDataConflict) + "/object_over_value",
		data: []DataFile{
			{File: "a.json", Value: obj("agentd", "x")},
			{File: "b.json", Value: obj("agentd", obj("y", 1))},
		},
		want: []where{{diag.KindDataConflict, "b.json", 0, 0}},
	}, {
		name:    string(diag.KindDataConflict) + "/rule_and_data",
		modules: []Module{{File: "p.rego", Source: []byte("package agentd.plan\n\ndeny contains \"x\" if input.bad\n")}},
		data:    []DataFile{{File: "d.json", Path: []string{"agentd", "plan"}, Value: obj("deny", []any{})}},
		want:    []where{{diag.KindDataConflict, "p.rego", 3, 1}},
		mention: "d.json",
	}, {
		name: string(diag.KindDataSyntax) + "/root_not_object",
		data: []DataFile{{File: "a.json", Value: []any{1}}},
		want: []where{{diag.KindDataSyntax, "a.json", 0, 0}},
	}, {
		name: "two_bad_files_sorted",
		modules: []Module{
			{File: "z.rego", Source: []byte("package z\n\np if {\n\tx := y\n\tx == 1\n}\n")},
			{File: "a.rego", Source: []byte("package a\n\nq if {\n\tz == w\n}\n")},
		},
		want: []where{
			{diag.KindRegoCompile, "a.rego", 4, 2},
			{diag.KindRegoCompile, "a.rego", 4, 2},
			{diag.KindRegoCompile, "z.rego", 4, 2},
		},
	}, {
		name: "two_parse_errors_and_a_data_conflict",
		modules: []Module{
			{File: "z.rego", Source: []byte("package z\n\nallow if input.x = = 1\n")},
			{File: "a.rego", Source: []byte("package a\n\nq if input.y = = 2\n")},
		},
		data: []DataFile{
			{File: "m.json", Value: obj("k", 1)},
			{File: "n.json", Value: obj("k", 2)},
		},
		want: []where{
			{diag.KindRegoParse, "a.rego", 3, 16},
			{diag.KindDataConflict, "n.json", 0, 0},
			{diag.KindRegoParse, "z.rego", 3, 20},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Compile(tt.modules, tt.data, Options{})
			if err == nil {
				t.Fatalf("Compile succeeded (%v), want errors", b)
			}
			var es diag.List
			if !errors.As(err, &es) {
				t.Fatalf("error %T is not a diag.List: %v", err, err)
			}
			if got := wheres(es); !slices.Equal(got, tt.want) {
				t.Fatalf("errors:\n got %v\nwant %v\nfull:\n%v", got, tt.want, err)
			}
			if tt.mention != "" && !strings.Contains(es[0].Message, tt.mention) {
				t.Errorf("message %q does not mention %q", es[0].Message, tt.mention)
			}
		})
	}
}

func TestCompileLibrary(t *testing.T) {
	for _, withTests := range []bool{false, true} {
		if _, err := Compile(libraryModules(t, withTests), allowlistData(), Options{}); err != nil {
			t.Fatalf("Compile(library, tests=%v): %v", withTests, err)
		}
	}
}

func TestBundleModules(t *testing.T) {
	b := libraryBundle(t, Options{})
	wantMods := []string{"agentd/guard/guard.rego", "agentd/lib/lib.rego", "agentd/plan/plan.rego"}
	if got := b.Modules(); !slices.Equal(got, wantMods) {
		t.Errorf("Modules() = %v, want %v", got, wantMods)
	}
	b.Modules()[0] = "mutated"
	if b.Modules()[0] == "mutated" {
		t.Error("Modules() exposes the bundle's slice")
	}
}

func TestCompileCopiesInputs(t *testing.T) {
	src := []byte("package c\n\nlimit := data.limits.max\n")
	limits := map[string]any{"max": 5}
	b, err := Compile([]Module{{File: "c.rego", Source: src}}, []DataFile{{File: "l.json", Path: []string{"limits"}, Value: limits}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	copy(src, "xxxxxxx")
	limits["max"] = 6
	v, defined, err := mustPrepare(t, b, "data.c.limit").eval(t.Context(), nil)
	if err != nil || !defined || v != json.Number("5") {
		t.Fatalf("Eval = %v, %v, %v; want 5", v, defined, err)
	}
}

// A panic of OPA's compiler is a compile error of the bundle, not of the process: the
// module with a call in its rule head, which the parser check keeps from it, is given
// to the compiler directly.
func TestCompileModules_CompilerPanicIsAnError(t *testing.T) {
	m := Module{File: "head.rego", Source: []byte("package head\n\nf(xs).A if {\n\t0\n}\n")}
	parsed, errs := parseModules([]Module{{File: "ok.rego", Source: []byte("package ok\n\np := 1\n")}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	bad, err := ast.ParseModuleWithOpts(m.File, string(m.Source), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		t.Fatal(err)
	}
	c, errs := compileModules([]Module{{File: "ok.rego"}, m}, append(parsed, bad), nil)
	if c != nil || len(errs) != 1 || errs[0].Kind != diag.KindRegoCompile || !strings.Contains(errs[0].Message, "OPA's compiler failed") {
		t.Fatalf("compiler %v, errors %v; want one rego_compile error naming the compiler's failure", c, errs)
	}
}
