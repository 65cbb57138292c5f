// Package hooktest runs the tests of a config directory: the Rego unit tests under
// policies/ (with OPA's own test runner and the directory's data documents, so results
// match `opa test policies/ data/`) and the pipeline cases of tests/*.yaml through the
// request driver against a compiled generation.
package hooktest

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
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

// Options configure Run. The zero value is valid.
type Options struct {
	// States and Records are where the pipeline cases' requests live; nil fields get a
	// fresh in-process store, so a caller that passes its own can read the records the
	// cases left.
	States  engine.StateStore
	Records engine.RecordStore
}

// Run runs the Rego tests of dir/policies with the data documents of dir/data mounted
// exactly as the generation serves them (as `opa test DIR/policies DIR/data` would),
// then the pipeline cases of dir/tests against gen, which must be the generation
// compiled from dir. Cases run in file order through the request driver, as the daemon
// runs stage calls, on one generation: a case may rely on state (cache entries, rate
// limit counters, the request of an earlier case with the same request_id) an earlier
// case left.
func Run(ctx context.Context, dir string, gen *config.Generation, opts Options) (Report, error) {
	var report Report
	rego, err := runRego(ctx, dir, gen)
	if err != nil {
		return report, err
	}
	report.Results = append(report.Results, rego...)
	cases, err := config.LoadTests(dir)
	if err != nil {
		return report, err
	}
	if opts.States == nil || opts.Records == nil {
		mem := store.NewMemory(store.MemoryOptions{})
		opts.States, opts.Records = cmp.Or[engine.StateStore](opts.States, mem), cmp.Or[engine.RecordStore](opts.Records, mem)
	}
	driver, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &gen.Generation}, States: opts.States, Records: opts.Records})
	if err != nil {
		return report, err
	}
	r := &runner{driver: driver, states: opts.States, gen: gen}
	for _, c := range cases {
		report.Results = append(report.Results, Result{
			Suite:    fmt.Sprintf("%s:%d", c.File, c.Line),
			Name:     c.Name,
			Failures: r.runCase(ctx, c),
		})
	}
	return report, nil
}

// runRego runs OPA's tester over dir/policies, with the data document gen serves.
func runRego(ctx context.Context, dir string, gen *config.Generation) ([]Result, error) {
	root, err := filepath.EvalSymlinks(filepath.Join(dir, "policies"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	modules, _, err := tester.Load([]string{root}, func(abspath string, info os.FileInfo, _ int) bool {
		return strings.HasPrefix(info.Name(), ".")
	})
	if err != nil {
		return nil, fmt.Errorf("load policies for testing: %w", err)
	}
	data := map[string]any{}
	if gen.Policies != nil {
		if data, err = gen.Policies.Data(); err != nil {
			return nil, err
		}
	}
	ch, err := tester.NewRunner().SetStore(inmem.NewFromObject(data)).SetTimeout(10*time.Second).SetModules(modules).RunTests(ctx, nil)
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
