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
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/lineage"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/policy"
	"github.com/agentd-dev/agentd/engine/store"
)

// Result is the outcome of one test.
type Result struct {
	// Suite is "rego" for policy tests, else the test file.
	Suite    string
	Name     string
	Failures []string
	// Notes say what a pipeline case's hooks skipped and why (a cache.store without an
	// accepted plan), printed for passed cases too.
	Notes []string
	// Trace is OPA's trace of a failed test (Options.Trace): of the Rego test, or of
	// the policy evaluations of a pipeline case.
	Trace string
}

// Passed reports whether the test passed.
func (r Result) Passed() bool { return len(r.Failures) == 0 }

// Report is the outcome of a run.
type Report struct {
	Results []Result
	// Coverage is the policies' line coverage (Options.Coverage), else nil.
	Coverage *Coverage
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

// Print writes every failure with its details (and trace), the coverage when measured,
// then the line "N passed, N failed".
func (r Report) Print(w io.Writer) {
	for _, res := range r.Results {
		if res.Passed() {
			if len(res.Notes) > 0 {
				fmt.Fprintf(w, "note %s: %s\n", res.Suite, res.Name)
			}
			for _, n := range res.Notes {
				fmt.Fprintf(w, "    %s\n", n)
			}
			continue
		}
		fmt.Fprintf(w, "FAIL %s: %s\n", res.Suite, res.Name)
		for _, f := range res.Failures {
			fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(f, "\n", "\n    "))
		}
		for _, n := range res.Notes {
			fmt.Fprintf(w, "    note: %s\n", n)
		}
		if res.Trace != "" {
			fmt.Fprintf(w, "    trace:\n      %s\n", strings.ReplaceAll(strings.TrimRight(res.Trace, "\n"), "\n", "\n      "))
		}
	}
	if r.Coverage != nil {
		r.Coverage.Print(w)
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
	// Coverage measures the line coverage of the policies (their _test.rego files
	// left out) by the Rego tests and the pipeline cases together, with OPA's cover.
	// Decision memos are bypassed, so every case evaluates.
	Coverage bool
	// Trace keeps OPA's trace of each failed test in Result.Trace.
	Trace bool
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
	modules, err := regoModules(dir)
	if err != nil {
		return report, err
	}
	var cov *cover.Cover
	if opts.Coverage {
		cov = cover.New()
		ctx = policy.WithQueryTracer(ctx, cov)
	}
	rego, err := runRego(ctx, gen, modules, cov, opts.Trace)
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
		caseCtx, explainer := ctx, (*policy.Explainer)(nil)
		if opts.Trace {
			explainer = policy.NewExplainer()
			caseCtx = explainer.Context(ctx)
		}
		res := Result{Suite: fmt.Sprintf("%s:%d", c.File, c.Line), Name: c.Name}
		res.Failures, res.Notes = r.runCase(caseCtx, c)
		if !res.Passed() && explainer != nil {
			var b strings.Builder
			for _, x := range explainer.Explanations() {
				fmt.Fprintf(&b, "%s:\n", x.Query)
				x.PrettyFails(&b)
			}
			res.Trace = b.String()
		}
		report.Results = append(report.Results, res)
	}
	if cov != nil {
		report.Coverage = coverage(cov, modules)
	}
	return report, nil
}

// regoModules parses the Rego files of dir/policies, tests included, named by their
// path in dir as the generation names them (policies/agentd/plan/plan.rego).
func regoModules(dir string) (map[string]*ast.Module, error) {
	root, err := filepath.EvalSymlinks(filepath.Join(dir, "policies"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	modules := map[string]*ast.Module{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p != root && strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir() || filepath.Ext(p) != ".rego":
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		name := path.Join("policies", filepath.ToSlash(rel))
		m, err := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			return fmt.Errorf("load policies for testing: %w", err)
		}
		modules[name] = m
		return nil
	})
	return modules, err
}

// runRego runs OPA's tester over the modules, with the data document gen serves; cov,
// when not nil, records their coverage, and trace keeps the trace of failed tests.
func runRego(ctx context.Context, gen *config.Generation, modules map[string]*ast.Module, cov *cover.Cover, trace bool) ([]Result, error) {
	if len(modules) == 0 {
		return nil, nil
	}
	data := map[string]any{}
	if gen.Policies != nil {
		var err error
		if data, err = gen.Policies.Data(); err != nil {
			return nil, err
		}
	}
	runner := tester.NewRunner().SetStore(inmem.NewFromObject(data)).SetTimeout(10 * time.Second).SetModules(modules).EnableTracing(trace)
	if cov != nil {
		runner = runner.SetCoverageQueryTracer(cov)
	}
	ch, err := runner.RunTests(ctx, nil)
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
		if !res.Passed() && len(r.Trace) > 0 {
			var b strings.Builder
			topdown.PrettyTraceWithLocation(&b, lineage.Fails(r.Trace))
			res.Trace = b.String()
		}
		out = append(out, res)
	}
	slices.SortStableFunc(out, func(a, b Result) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
