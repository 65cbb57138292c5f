package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agentd-dev/agentd/config/hooktest"
)

const testDoc = `
Run the Rego unit tests under DIR/policies with OPA's own test runner (the data
documents of DIR/data mounted as the daemon serves them, as 'opa test policies/ data/'
would), then the pipeline cases of DIR/tests/*.yaml through the request driver.
Prints each failure, then "N passed, N failed".

--coverage adds the policies' line coverage (their _test.rego files left out) by the
Rego tests and the pipeline cases together, per file, from OPA's cover; decision
memos are bypassed so every case evaluates. --min-coverage N fails below N percent.
-v adds, under each failure, OPA's trace of it: the failing expressions and the
rules that led to each.

Exit 0: every test passed (and coverage at least --min-coverage); 1: a failure;
2: usage.`

func runTest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("test", "agentd test [--coverage] [--min-coverage N] [-v] DIR", testDoc, stderr)
	withCoverage := fs.Bool("coverage", false, "report the policies' line coverage per file")
	minCoverage := fs.Float64("min-coverage", 0, "fail when the total line coverage is below this percentage (implies --coverage)")
	verbose := fs.Bool("v", false, "print OPA's trace of each failure")
	pos, code, ok := fs.parse(args, stdout, 1, 1)
	if !ok {
		return code
	}
	dir := pos[0]
	gen, code := loadDir(dir, stderr)
	if gen == nil {
		return code
	}
	report, err := hooktest.Run(ctx, dir, gen, hooktest.Options{Coverage: *withCoverage || *minCoverage > 0, Trace: *verbose})
	if err != nil {
		printLoadError(stderr, dir, err)
		return exitFailed
	}
	report.Print(stdout)
	if _, failed := report.Counts(); failed > 0 {
		return exitFailed
	}
	if c := report.Coverage; c != nil && c.Percent() < *minCoverage {
		fmt.Fprintf(stderr, "agentd test: coverage %.1f%% is below --min-coverage %.1f%%\n", c.Percent(), *minCoverage)
		return exitFailed
	}
	return exitOK
}
