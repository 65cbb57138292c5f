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

	"github.com/agentd-dev/agentd/policies"
)

// starter is the starter config `agentd init` writes, beside the stock plan policy
// and the schemas.
//
//go:embed starter
var starter embed.FS

const initDoc = `
Write a working starter config into DIR (created; it must not exist or be empty): a
catalog, the required allow-list hook with the stock plan policy (policies/agentd,
with its Rego tests) and its data, an enrichment, a redaction, pipeline tests, an
example request and the JSON Schemas the files point at (schemas/). It passes
'agentd check --strict', 'agentd test' and 'agentd probe' as written.`

func runInit(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("init", "agentd init DIR", initDoc, stderr)
	pos, code, ok := fs.parse(args, stdout, 1, 1)
	if !ok {
		return code
	}
	dir := pos[0]
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		fmt.Fprintf(stderr, "agentd init: %s is not empty; init never overwrites files\n", dir)
		return exitUsage
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "agentd init: %v\n", err)
		return exitFailed
	}
	if err := writeStarter(dir); err != nil {
		fmt.Fprintf(stderr, "agentd init: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "wrote a starter config to %s; next: agentd check --strict %s && agentd test %s && agentd probe %s\n", dir, dir, dir, dir)
	return exitOK
}

// writeStarter writes the starter files, the stock plan policy under policies/ and the
// schemas under schemas/.
func writeStarter(dir string) error {
	root, err := fs.Sub(starter, "starter")
	if err != nil {
		return err
	}
	if err := copyTree(root, dir); err != nil {
		return err
	}
	if err := copyTree(policies.Library(), filepath.Join(dir, "policies")); err != nil {
		return err
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
