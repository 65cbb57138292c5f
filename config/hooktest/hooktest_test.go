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
