package config_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
)

var update = flag.Bool("update", false, "rewrite the expected.golden files of testdata/invalid (never want.txt)")

// diagKinds is every kind a load may report.
var diagKinds = []diag.Kind{
	diag.KindYAMLSyntax, diag.KindSchema, diag.KindUnknownKey, diag.KindDuplicateKey,
	diag.KindDuplicateHook, diag.KindInvalidValue, diag.KindUnknownAction, diag.KindInvalidParams,
	diag.KindCELSyntax, diag.KindCELTypeCheck, diag.KindCELUndeclaredVariable, diag.KindCELCostLimit,
	diag.KindRegoParse, diag.KindRegoCompile, diag.KindRegoUnsafeBuiltin, diag.KindUndefinedQuery,
	diag.KindDataSyntax, diag.KindDataConflict, diag.KindRequiredHook, diag.KindCatalog,
	diag.KindGuard, diag.KindGateway, diag.KindIO, diag.KindTooManyErrors,
}

func isDiagKind(kind diag.Kind) bool {
	for _, k := range diagKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// loadFails loads dir, which must not compile, and returns the error as the diag.List
// Load promises.
func loadFails(t testing.TB, dir string) diag.List {
	t.Helper()
	gen, err := config.Load(dir, config.Options{})
	if err == nil {
		t.Fatalf("Load(%s) succeeded with generation %s, want errors", dir, gen.ID)
	}
	if gen != nil {
		t.Errorf("Load(%s) returned a generation together with an error", dir)
	}
	var list diag.List
	if !errors.As(err, &list) {
		t.Fatalf("Load(%s) error is %T, want diag.List: %v", dir, err, err)
	}
	return list
}

// mustLoad loads dir, which must compile.
func mustLoad(t testing.TB, dir string) *config.Generation {
	t.Helper()
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		var buf bytes.Buffer
		if list, ok := diag.AsList(err); ok {
			list.Render(&buf, dirSource(dir))
		} else {
			buf.WriteString(err.Error())
		}
		t.Fatalf("Load(%s):\n%s", dir, buf.String())
	}
	return gen
}

// position renders what the corpus asserts about one error: `file:line:col kind`.
func position(e *diag.Error) string {
	return fmt.Sprintf("%s:%d:%d %s", e.File, e.Line, e.Column, e.Kind)
}

// dirSource reads the files a diagnostic names, relative to the config directory.
func dirSource(dir string) func(string) ([]byte, bool) {
	return func(name string) ([]byte, bool) {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		return data, err == nil
	}
}

// writeFiles writes files (slash path relative to dir -> content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// golden compares got with the file at path, or rewrites the file under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./config -run Corpus -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test ./config -run Corpus -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// hookSet returns a HookSet document named name with body (YAML at top level) appended.
func hookSet(name, body string) string {
	return "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: " + name + "}\n" + strings.TrimLeft(body, "\n")
}

// pipelineOrder runs stage once on gen's pipeline and returns the names of the hooks it
// invoked, in order.
func pipelineOrder(gen *config.Generation, stage engine.Stage) []string {
	ctx, trail := context.Background(), engine.NewTrail()
	pctx := &engine.PipelineContext{Request: "hello", Metadata: map[string]any{}, Enrichments: map[string]any{}}
	p := gen.Pipeline
	switch stage {
	case engine.StageBeforePlanning:
		_, _ = p.BeforePlanning(ctx, pctx, engine.Gate{}, trail)
	case engine.StageAfterPlanning:
		_, _ = p.AfterPlanning(ctx, pctx, &engine.RoutingPlan{PlanID: "p1"}, nil, trail)
	case engine.StageAfterExecution:
		p.AfterExecution(ctx, pctx, &engine.ExecutionResult{}, trail)
	case engine.StageAfterSynthesis:
		p.AfterSynthesis(ctx, pctx, "hi", trail)
	}
	var names []string
	for _, inv := range trail.Invocations() {
		names = append(names, inv.HookName)
	}
	return names
}
