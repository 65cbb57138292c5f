package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentd-dev/agentd/policies"
)

// starter holds the projects `agentd init` writes: starter/minimal, a project to
// make one's own, and starter/stock, the stock-trading example's config with the
// stock plan policy.
//
//go:embed starter
var starter embed.FS

// examples are the projects `agentd init --example` writes besides the minimal one,
// each with the commands its README suggests first.
var examples = map[string]string{
	"stock": "agentd check --strict %[1]s && agentd test %[1]s && agentd probe %[1]s",
}

const initDoc = `
Write a new project into DIR (created; it must not exist or be empty; init never
overwrites a file). By default a minimal project to make one's own: a catalog, one
required after_planning hook reviewing every plan with the project's Rego policy
(policies/myagent, with its opa test file) and its allow-list (data/myagent), one
guard, pipeline cases (tests/), the JSON Schemas the files point at (schemas/) and a
README saying what to change and what to run. It passes 'agentd check --strict',
'agentd test', 'agentd opa test policies/ data/' and 'agentd probe' as written, and
'agentd serve --config DIR' serves it.

--example stock writes the stock-trading starter instead: the required allow-list
hook with the stock plan policy (policies/agentd), an enrichment, a redaction, tests,
an example request and the schemas.`

func runInit(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("init", "agentd init [--example NAME] DIR", initDoc, stderr)
	example := fs.String("example", "", "write this example instead of the minimal project: "+strings.Join(exampleNames(), ", "))
	pos, code, ok := fs.parse(args, stdout, 1, 1)
	if !ok {
		return code
	}
	dir := pos[0]
	next, known := examples[*example]
	if *example != "" && !known {
		fmt.Fprintf(stderr, "agentd init: --example %q is unknown (known: %s)\n", *example, strings.Join(exampleNames(), ", "))
		return exitUsage
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		fmt.Fprintf(stderr, "agentd init: %s is not empty; init never overwrites files\n", dir)
		return exitUsage
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "agentd init: %v\n", err)
		return exitFailed
	}
	if err := writeProject(dir, *example); err != nil {
		fmt.Fprintf(stderr, "agentd init: %v\n", err)
		return exitFailed
	}
	if *example == "" {
		fmt.Fprintf(stdout, "wrote a new project to %s; its README.md says what to change; next: cd %s && agentd check --strict . && agentd test .\n", dir, dir)
		return exitOK
	}
	fmt.Fprintf(stdout, "wrote the %s example to %s; next: %s\n", *example, dir, fmt.Sprintf(next, dir))
	return exitOK
}

// exampleNames returns the names --example takes, sorted.
func exampleNames() []string {
	names := make([]string, 0, len(examples))
	for name := range examples {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// writeProject writes the minimal project (example "") or the named example into dir,
// with the schemas under schemas/; the stock example also gets the stock plan policy
// under policies/.
func writeProject(dir, example string) error {
	name := example
	if name == "" {
		name = "minimal"
	}
	root, err := fs.Sub(starter, "starter/"+name)
	if err != nil {
		return err
	}
	if err := copyTree(root, dir); err != nil {
		return err
	}
	if example == "stock" {
		if err := copyTree(policies.Library(), filepath.Join(dir, "policies")); err != nil {
			return err
		}
	}
	return writeSchemas(filepath.Join(dir, "schemas"))
}

// copyTree copies every file of src into dir.
func copyTree(src fs.FS, dir string) error {
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
}
