package hooktest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
)

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRun_ReportsRegoAndPipelineFailuresWithDiffs(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "hooks/a.yaml", `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: a}
hooks:
  - name: greet
    stage: before_planning
    steps:
      - enrich: {key: rag_context, value: "'hello ' + request"}
  - name: shout
    stage: after_synthesis
    steps:
      - truncate: {max_bytes: 5, suffix: "!"}
`)
	write(t, dir, "policies/p/p.rego", "package p\n\nx := 1\n")
	write(t, dir, "policies/p/p_test.rego", "package p_test\n\nimport data.p\n\ntest_x_is_one if p.x == 1\n\ntest_x_is_two if p.x == 2\n")
	write(t, dir, "tests/t.yaml", `apiVersion: agentd.dev/v1
kind: HookTests
tests:
  - name: greets
    stage: before_planning
    given: {request: bob}
    expect: {enrichments: {rag_context: hello bob}, short_circuit: null}
  - name: wrong greeting
    stage: before_planning
    given: {request: bob}
    expect: {enrichments: {rag_context: hi bob}}
  - name: truncated
    stage: after_synthesis
    given: {response: "a long answer"}
    expect: {response: "a lo!"}
`)
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	report, err := Run(context.Background(), dir, gen, Options{})
	if err != nil {
		t.Fatal(err)
	}
	passed, failed := report.Counts()
	if passed != 3 || failed != 2 {
		t.Fatalf("passed %d failed %d, want 3 and 2: %+v", passed, failed, report.Results)
	}
	var out bytes.Buffer
	report.Print(&out)
	text := out.String()
	for _, want := range []string{
		"FAIL rego: data.p_test.test_x_is_two",
		"FAIL tests/t.yaml:8: wrong greeting",
		`want "hi bob"`, `got  "hello bob"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if !regexp.MustCompile(`(?m)^3 passed, 2 failed$`).MatchString(text) {
		t.Errorf("report does not end with the count line:\n%s", text)
	}
}

func TestRun_InvalidTestFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "hooks/a.yaml", "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: a}\n")
	write(t, dir, "tests/t.yaml", "apiVersion: agentd.dev/v1\nkind: HookTests\ntests:\n  - name: x\n    stage: nowhere\n    expect: {}\n")
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), dir, gen, Options{}); err == nil || !strings.Contains(err.Error(), "tests/t.yaml:5") {
		t.Fatalf("err = %v, want a positioned schema error", err)
	}
}

// An operation case's guards see given.metadata and given.request: on a request of its
// own (the call's request unknown) they are the call's, on a request an earlier case
// opened they are that request's, whatever the call carries.
func TestRun_OperationCasesGiveGuardsTheRequestsMetadata(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "hooks/a.yaml", `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: a}
hooks:
  - name: tier
    stage: before_planning
    steps:
      - enrich: {key: rag_context, value: "'tier ' + string(metadata.loyalty_tier)"}
guards:
  policy_revision: r1
  rules:
    - operation: inference
      deny_if: "metadata.loyalty_tier == 'silver' && request.contains('book')"
      code: tier_limit
      reason: over the tier's limit
`)
	write(t, dir, "tests/t.yaml", `apiVersion: agentd.dev/v1
kind: HookTests
tests:
  - name: a silver booking of its own is denied
    stage: operation
    given: {request: book it, metadata: {loyalty_tier: silver}, operation: inference, call: {model: m}}
    expect: {allowed: false, denial: {code: tier_limit}}
  - name: a gold booking of its own is allowed
    stage: operation
    given: {request: book it, metadata: {loyalty_tier: gold}, operation: inference, call: {model: m}}
    expect: {allowed: true}
  - name: a silver request opens
    stage: before_planning
    given: {request_id: r1, request: book it, metadata: {loyalty_tier: silver}}
    expect: {enrichments: {rag_context: tier silver}}
  - name: its call is denied whatever metadata the call claims
    stage: operation
    given: {request_id: r1, operation: inference, call: {model: m, metadata: {loyalty_tier: gold}}}
    expect: {allowed: false, denial: {code: tier_limit}}
`)
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	report, err := Run(context.Background(), dir, gen, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if passed, failed := report.Counts(); passed != 4 || failed != 0 {
		var out bytes.Buffer
		report.Print(&out)
		t.Fatalf("passed %d failed %d, want 4 and 0:\n%s", passed, failed, out.String())
	}
}

// A case whose cache.store stored nothing says why, passed or not: the request had no
// plan accepted.
func TestRun_NotesWhyCacheStoreSkipped(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "hooks/a.yaml", `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: a}
hooks:
  - name: cache
    stage: after_synthesis
    steps:
      - cache.store: {key: "request"}
`)
	write(t, dir, "tests/t.yaml", `apiVersion: agentd.dev/v1
kind: HookTests
tests:
  - name: an answer without a plan
    stage: after_synthesis
    given: {request: q, response: "an answer"}
    expect: {response: "an answer"}
`)
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	report, err := Run(context.Background(), dir, gen, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	report.Print(&out)
	want := "note tests/t.yaml:4: an answer without a plan\n    hook \"cache\": cache.store skipped: not stored: the request had no plan accepted"
	if !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
}
