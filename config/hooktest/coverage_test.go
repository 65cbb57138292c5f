package hooktest

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd-dev/agentd/config"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// coverageDir is a config whose policy has three deny rules: the pipeline cases reach
// one (through the decision memo, which coverage bypasses), the Rego tests another, and
// nothing the third; one Rego test and one case fail.
func coverageDir(t *testing.T) string {
	dir := t.TempDir()
	write(t, dir, "hooks/a.yaml", `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: a}
hooks:
  - name: review
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.review}
`)
	write(t, dir, "policies/review.rego", `package review

deny contains "no trades" if {
	some step in input.plan.steps
	step.metadata.capability == "execute_trade"
}

deny contains "no deletes" if {
	some step in input.plan.steps
	step.metadata.capability == "delete"
}

deny contains "no phase 9" if {
	input.phase == 9
}
`)
	write(t, dir, "policies/review_test.rego", `package review_test

import data.review

test_delete_denied if {
	count(review.deny) == 1 with input as {"plan": {"steps": [{"metadata": {"capability": "delete"}}]}}
}

test_wrong if {
	count(review.deny) == 2 with input as {"plan": {"steps": []}}
}
`)
	trade := `{plan_id: p, steps: [{step_id: s1, agent_name: a, namespace: n, metadata: {capability: execute_trade}}]}`
	write(t, dir, "tests/t.yaml", `apiVersion: agentd.dev/v1
kind: HookTests
tests:
  - name: a trade is rejected
    stage: after_planning
    given: {plan: `+trade+`}
    expect: {plan: rejected}
  - name: the same trade again, from the memo unless traced
    stage: after_planning
    given: {plan: `+trade+`}
    expect: {plan: allowed}
`)
	return dir
}

func TestRun_CoverageAndTracesGolden(t *testing.T) {
	dir := coverageDir(t)
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	report, err := Run(context.Background(), dir, gen, Options{Coverage: true, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	c := report.Coverage
	if c == nil || len(c.Files) != 1 || c.Files[0].File != "policies/review.rego" {
		t.Fatalf("coverage = %+v, want policies/review.rego alone (no test file)", c)
	}
	if f := c.Files[0]; f.Covered == 0 || len(f.NotCoveredLines) != 1 || f.NotCoveredLines[0] != "13-14" {
		t.Errorf("coverage of review.rego = %+v, want everything but the phase 9 rule (lines 13-14)", f)
	}
	var out bytes.Buffer
	report.Print(&out)
	golden := filepath.Join("testdata", "coverage_trace.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if out.String() != string(want) {
		t.Errorf("report differs from %s (run with -update to accept):\n%s", golden, out.String())
	}
}

// TestRun_PipelineCasesAloneCover: without Rego tests, coverage comes from the cases.
func TestRun_PipelineCasesAloneCover(t *testing.T) {
	dir := coverageDir(t)
	if err := os.Remove(filepath.Join(dir, "policies", "review_test.rego")); err != nil {
		t.Fatal(err)
	}
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	report, err := Run(context.Background(), dir, gen, Options{Coverage: true})
	if err != nil {
		t.Fatal(err)
	}
	if f := report.Coverage.Files[0]; f.Covered == 0 || f.NotCovered == 0 {
		t.Errorf("coverage by the cases alone = %+v, want some lines covered and some not", f)
	}
}
