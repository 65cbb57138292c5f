package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"github.com/agentd-dev/agentd/schemas"
)

const schemaDoc = `
Write agentd's JSON Schemas (HookSet for hooks/*.yaml, HookTests for tests/*.yaml,
RoutingPlan for plans) into DIR, creating it, so that editors outside this repository
validate and complete config files: start a file with

  # yaml-language-server: $schema=../schemas/hookset.schema.json

The copies have no $id, so their references to each other resolve next to them, not
over the network. Existing files of the same names are replaced.`

func runSchema(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("schema", "agentd schema DIR", schemaDoc, stderr)
	pos, code, ok := fs.parse(args, stdout, 1, 1)
	if !ok {
		return code
	}
	if err := writeSchemas(pos[0]); err != nil {
		fmt.Fprintf(stderr, "agentd schema: %v\n", err)
		return exitFailed
	}
	for _, name := range schemas.Names() {
		fmt.Fprintln(stdout, filepath.Join(pos[0], name))
	}
	return exitOK
}

// schemaID matches the $id line of an embedded schema file.
var schemaID = regexp.MustCompile(`(?m)^\s*"\$id": "[^"]*",\n`)

// writeSchemas writes every embedded schema into dir without its $id.
func writeSchemas(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range schemas.Names() {
		data := schemaID.ReplaceAll(schemas.File(name), nil)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
