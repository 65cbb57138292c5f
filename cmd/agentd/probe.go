package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/probe"
)

const probeDoc = `
Attack the required after-planning Rego policy of DIR with mutated plans and report
every plan the whole after_planning stage accepts although it holds an operation
identity (namespace/agent_name/capability) the policy did not allow unmutated.

Seeds are one plan per catalog capability, the after_planning plans of tests/*.yaml
and the plans of requests/*.json (the catalog's plans with the request metadata of the
first of those that has some and, when the policy reads the metadata, with each other
metadata they hold; a warning when it reads metadata no seed has). A plan whose
request metadata was mutated (a member missing, null, empty, unknown or retyped) is a
finding when it gets an identity its unmutated metadata was not allowed. When the
after_planning stage or the guards read the request's labels or history, the seeds are
repeated under each declared label alone and all of them; a plan under labels is
judged against what its label set was allowed (and by the guards when they read the
labels), and a reader of the labels whose decisions no label set changes is a finding
too (its label rules never fire). Each finding
is one line: the mutation, the identity that got through, the minimal plan as JSON
(a reproducing after_planning call and test case) and the deny rule that should have
caught it. Runs in process, never writes into DIR, and is deterministic for a --seed.

Exit 0: no finding; 1: findings; 2: bad input (no required after_planning hook with a
rego step, a config that does not compile, tests or requests that do not load).`

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("probe", "agentd probe [flags] DIR", probeDoc, stderr)
	seed := fs.Int64("seed", 1, "seed of the homoglyph positions, hidden-step positions and the sample of plans reviewed")
	maxPlans := fs.Int("max-plans", probe.DefaultMaxPlans, "mutated plans reviewed at most (a sample chosen by --seed when more are generated)")
	timeout := fs.Duration("timeout", probe.DefaultTimeout, "how long the probe may run")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cases := fs.String("cases", "", "also write a tests/*.yaml document of the probe's cases to this file (not inside DIR)")
	verbose := fs.Bool("v", false, "also print, per mutation, what it does and where its plans ended")
	pos, code, ok := fs.parse(args, stdout, 1, 1)
	if !ok {
		return code
	}
	dir := pos[0]
	if *cases != "" && inside(*cases, dir) {
		fmt.Fprintf(stderr, "agentd probe: --cases %s is inside %s: the probe never writes into the config directory\n", *cases, dir)
		return exitUsage
	}
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		printLoadError(stderr, dir, err)
		return exitUsage
	}
	report, err := probe.Run(ctx, dir, gen, probe.Options{Seed: *seed, MaxPlans: *maxPlans, Timeout: *timeout})
	var inputErr *probe.InputError
	if errors.As(err, &inputErr) {
		fmt.Fprintf(stderr, "agentd %v\n", err)
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentd probe: %v\n", err)
		return exitUsage
	}
	if *cases != "" {
		if err := os.WriteFile(*cases, report.Cases(), 0o644); err != nil {
			fmt.Fprintf(stderr, "agentd probe: %v\n", err)
			return exitUsage
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		_ = enc.Encode(report)
	} else {
		report.Print(stdout)
		if *verbose {
			report.PrintMutations(stdout)
		}
	}
	if len(report.Findings) > 0 || len(report.LabelFindings) > 0 {
		return exitFailed
	}
	return exitOK
}

// inside reports whether path is dir or lies below it (symlinks resolved as far as
// they exist).
func inside(path, dir string) bool {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		for d, rest := a, ""; ; d, rest = filepath.Dir(d), filepath.Join(filepath.Base(d), rest) {
			if r, err := filepath.EvalSymlinks(d); err == nil {
				return filepath.Join(r, rest)
			}
			if d == filepath.Dir(d) {
				return a
			}
		}
	}
	p, d := abs(path), abs(dir)
	return p == d || strings.HasPrefix(p, d+string(filepath.Separator))
}
