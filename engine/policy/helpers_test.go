package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/open-policy-agent/opa/v1/ast"
)

// libraryDir is the repository's Rego library.
const libraryDir = "../../policies"

// libraryModules reads the library's .rego files, with or without the _test.rego ones.
func libraryModules(tb testing.TB, withTests bool) []Module {
	tb.Helper()
	var mods []Module
	err := filepath.WalkDir(libraryDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".rego" {
			return err
		}
		if !withTests && strings.HasSuffix(path, "_test.rego") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(libraryDir, path)
		mods = append(mods, Module{File: filepath.ToSlash(rel), Source: src})
		return nil
	})
	if err != nil {
		tb.Fatalf("read library: %v", err)
	}
	return mods
}

// allowlistData is the demo allow-list: demo-tools/stock-service may only quote.
func allowlistData() []DataFile {
	return []DataFile{{
		File: "data/agentd.json",
		Value: map[string]any{"agentd": map[string]any{"allowlist": map[string]any{
			"demo-tools": map[string]any{"stock-service": []any{"stock_quote"}},
		}}},
	}}
}

// libraryBundle compiles the library (without its tests) with the demo allow-list.
func libraryBundle(tb testing.TB, opts Options) *Bundle {
	tb.Helper()
	b, err := Compile(libraryModules(tb, false), allowlistData(), opts)
	if err != nil {
		tb.Fatalf("Compile(library): %v", err)
	}
	return b
}

// mustCompile compiles Rego sources keyed by file name, failing the test on error.
func mustCompile(tb testing.TB, opts Options, files ...string) *Bundle {
	tb.Helper()
	var mods []Module
	for i := 0; i+1 < len(files); i += 2 {
		mods = append(mods, Module{File: files[i], Source: []byte(files[i+1])})
	}
	b, err := Compile(mods, nil, opts)
	if err != nil {
		tb.Fatalf("Compile: %v", err)
	}
	return b
}

func mustPrepare(tb testing.TB, b *Bundle, query string) *Query {
	tb.Helper()
	q, err := b.Prepare(query)
	if err != nil {
		tb.Fatalf("Prepare(%s): %v", query, err)
	}
	return q
}

// mustPlanInput is PlanInput for p in phase 1, failing the test on error.
func mustPlanInput(tb testing.TB, p *engine.RoutingPlan) ast.Value {
	tb.Helper()
	in, err := PlanInput(p, 1, p.OriginalRequest, map[string]any{"tenant": "acme"}, map[string]any{}, nil)
	if err != nil {
		tb.Fatalf("PlanInput: %v", err)
	}
	return in
}
