package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentd-dev/agentd/config/bundle"
	"github.com/agentd-dev/agentd/engine/diag"
)

const buildDoc = `
Compile a config directory and write it as an OPA-format bundle: a gzipped tar of
hooks/, policies/ and data/ (and tests/ with --tests) under the names the loader reads,
with a .manifest holding the revision (by default the config's content hash) and the
roots (the first segment of every policy package and data mount). With --signing-key
the bundle carries a .signatures.json in OPA's format: one JWT listing every file with
its SHA-256 (.manifest, data.json and data.yaml hashed over their parsed value, as OPA
hashes them; every other file over its bytes). agentd serve --bundle loads it; the
stock opa verifies its signature too (opa build --verification-key K -b B.tar.gz).

A directory that does not compile is not written: its errors print as file:line:col.
Exit 0: written; 1: config errors or signing failed; 2: usage.`

func runBuild(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("build", "agentd build [--signing-key KEY] [--signing-alg RS256|ES256|HS256] [--claims-file F] [--revision R] --output B.tar.gz DIR", buildDoc, stderr)
	output := fs.String("output", "", "the bundle file to write (required)")
	revision := fs.String("revision", "", "the manifest's revision (default: the config's content hash); 1 to 128 letters, digits and . _ - : +")
	key := fs.String("signing-key", "", "sign with this key: a PEM private key file (RS256, ES256) or the HS256 secret, or the key itself, as opa build reads it")
	alg := fs.String("signing-alg", "RS256", "the JWS algorithm of --signing-key: RS256, ES256 or HS256 (OPA's other algorithms work too)")
	claims := fs.String("claims-file", "", "a JSON file of further JWT claims (with --signing-key)")
	tests := fs.Bool("tests", false, "include tests/ (pipeline test cases)")
	pos, code, ok := fs.parse(args, stdout, 1, 1)
	if !ok {
		return code
	}
	switch {
	case *output == "":
		fmt.Fprintln(stderr, "agentd build: --output is required")
		return exitUsage
	case *key == "" && *claims != "":
		fmt.Fprintln(stderr, "agentd build: --claims-file needs --signing-key")
		return exitUsage
	}
	opts := bundle.BuildOptions{Revision: *revision, Tests: *tests}
	if *key != "" {
		opts.Signing = &bundle.Signing{Key: *key, Alg: *alg, ClaimsFile: *claims}
	}
	var buf bytes.Buffer
	m, err := bundle.Build(&buf, pos[0], opts)
	if _, ok := diag.AsList(err); ok {
		printLoadError(stderr, pos[0], err)
		return exitFailed
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentd build: %v\n", err)
		return exitFailed
	}
	if err := os.WriteFile(*output, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "agentd build: %v\n", err)
		return exitFailed
	}
	signed := "unsigned"
	if m.Signed {
		signed = "signed"
	}
	fmt.Fprintf(stdout, "%s: revision %s, %s, %d files, roots %s\n", *output, m.Revision, signed, len(m.Files), strings.Join(quoteAll(m.Roots), ", "))
	return exitOK
}

// quoteAll quotes each string (a root "" stays visible).
func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
