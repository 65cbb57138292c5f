package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestMakefile_FuzzTargetsAreEveryFuzzTest keeps the Makefile's FUZZ_TARGETS (which
// make test and make fuzz run) equal to the Fuzz functions of the repository's tests.
func TestMakefile_FuzzTargetsAreEveryFuzzTest(t *testing.T) {
	root := repoRoot(t)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^FUZZ_TARGETS :=((?:.*\\\n)*.*)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no FUZZ_TARGETS")
	}
	var listed []string
	for _, target := range strings.Fields(strings.ReplaceAll(string(m[1]), "\\\n", " ")) {
		pkg, rest, _ := strings.Cut(target, ":")
		fn, count, ok := strings.Cut(rest, ":")
		if !ok || count == "" {
			t.Errorf("FUZZ_TARGETS entry %q is not package:Func:count", target)
		}
		listed = append(listed, pkg+":"+fn)
	}
	slices.Sort(listed)
	if found := fuzzTests(t, root); !slices.Equal(listed, found) {
		t.Errorf("FUZZ_TARGETS lists\n  %s\nthe repository's Fuzz functions are\n  %s",
			strings.Join(listed, "\n  "), strings.Join(found, "\n  "))
	}
}

// fuzzTests returns every fuzz test of the module under root as ./pkg:FuzzName, sorted.
func fuzzTests(t *testing.T, root string) []string {
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") {
				found = append(found, "./"+filepath.ToSlash(rel)+":"+fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(found)
	return found
}

// TestMakefile_RunLeavesNoProcessBehind: make run builds bin/agentd and execs it, so that
// an interrupt reaches the daemon itself; `go run` would leave its child holding the port.
func TestMakefile_RunLeavesNoProcessBehind(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^run:(.*)\n((?:\t.*\n)+)`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no run target")
	}
	if recipe := string(m[2]); !strings.Contains(string(m[1]), "build") || strings.Contains(recipe, " run ") ||
		!regexp.MustCompile(`(?m)^\texec bin/agentd serve `).MatchString(recipe) {
		t.Errorf("make run must depend on build and exec bin/agentd serve, not go run:\nrun:%s\n%s", m[1], recipe)
	}
}
