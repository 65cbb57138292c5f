// Package hooktest runs the tests of a config directory: the Rego unit tests under
// policies/ (with OPA's own test runner, so results match `opa test`) and the pipeline
// cases of tests/*.yaml against a compiled generation.
package hooktest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/agentd-dev/agentd/engine/decl"
)

// Result is the outcome of one test.
type Result struct {
	// Suite is "rego" for policy tests, else the test file.
	Suite    string
	Name     string
	Failures []string
}

// Passed reports whether the test passed.
func (r Result) Passed() bool { return len(r.Failures) == 0 }

// Report is the outcome of a run.
type Report struct {
	Results []Result
}

// Counts returns the number of passed and failed tests.
func (r Report) Counts() (passed, failed int) {
	for _, res := range r.Results {
		if res.Passed() {
			passed++
		} else {
			failed++
		}
	}
	return passed, failed
}

// Print writes every failure with its details, then the line "N passed, N failed".
func (r Report) Print(w io.Writer) {
	for _, res := range r.Results {
		if res.Passed() {
			continue
		}
		fmt.Fprintf(w, "FAIL %s: %s\n", res.Suite, res.Name)
		for _, f := range res.Failures {
			fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(f, "\n", "\n    "))
		}
	}
	passed, failed := r.Counts()
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
}

// Run runs the Rego tests of dir/policies (exactly as `opa test DIR/policies` would: data
// documents come from the tests' `with` clauses, not dir/data) and the pipeline cases
// of dir/tests against gen, which must be the generation compiled from dir. Cases run
// in file order on one generation, so a case may rely on state (cache entries, rate
// limit counters) an earlier case left.
func Run(ctx context.Context, dir string, gen *decl.Generation) (Report, error) {
	var report Report
	rego, err := runRego(ctx, dir)
	if err != nil {
		return report, err
	}
	report.Results = append(report.Results, rego...)
	cases, err := decl.LoadTests(dir)
	if err != nil {
		return report, err
	}
	for _, c := range cases {
		report.Results = append(report.Results, Result{
			Suite:    fmt.Sprintf("%s:%d", c.File, c.Line),
			Name:     c.Name,
			Failures: runCase(ctx, gen, c),
		})
	}
	return report, nil
}

// runRego runs OPA's tester over dir/policies.
func runRego(ctx context.Context, dir string) ([]Result, error) {
	root, err := filepath.EvalSymlinks(filepath.Join(dir, "policies"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	modules, store, err := tester.Load([]string{root}, func(abspath string, info os.FileInfo, _ int) bool {
		return strings.HasPrefix(info.Name(), ".")
	})
	if err != nil {
		return nil, fmt.Errorf("load policies for testing: %w", err)
	}
	ch, err := tester.NewRunner().SetStore(store).SetTimeout(10*time.Second).SetModules(modules).RunTests(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("run policy tests: %w", err)
	}
	var out []Result
	for r := range ch {
		if r.Skip {
			continue
		}
		res := Result{Suite: "rego", Name: r.Package + "." + r.Name}
		switch {
		case r.Error != nil:
			res.Failures = []string{"error: " + r.Error.Error()}
		case r.Fail:
			msg := "test failed"
			if r.Location != nil {
				msg = fmt.Sprintf("test failed at %s:%d", r.Location.File, r.Location.Row)
			}
			if r.FailedAt != nil {
				msg += ": " + r.FailedAt.String()
			}
			res.Failures = []string{msg}
		}
		out = append(out, res)
	}
	slices.SortStableFunc(out, func(a, b Result) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
