package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestCLI_CheckExample(t *testing.T) {
	code, out, errOut := runCLI(t, "check", filepath.Join(repoRoot(t), "examples", "stock-agent"))
	if code != exitOK {
		t.Fatalf("check exit %d: %s", code, errOut)
	}
	for _, want := range []string{"generation g-", "before_planning: 2 hook(s)", "1. allowed-operations [rego] (required)",
		"rego data.agentd.plan: decisions memoized on input.plan.steps (size), input.plan.steps[*].agent_name, input.plan.steps[*].metadata.capability",
		"required hook: allowed-operations", "guards (policy revision trade-limits-v2)"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

func TestCLI_CheckReportsEveryErrorWithPosition(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "hooks/a.yaml", "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: a}\nhooks:\n  - name: one\n    stage: before_planning\n    when: \"has(plan.steps)\"\n    steps:\n      - enrich: {key: x, value: \"1\"}\n  - name: two\n    stgae: after_planning\n    stage: after_planning\n    steps:\n      - rego: {query: data.x}\n")
	code, _, errOut := runCLI(t, "check", dir)
	if code != exitFailed {
		t.Fatalf("check exit %d, want 1: %s", code, errOut)
	}
	for _, want := range []string{
		"hooks/a.yaml:7:16: cel_undeclared_variable",
		"hooks/a.yaml:11:5: unknown_key",
		"^",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("check errors lack %q:\n%s", want, errOut)
		}
	}
}

func TestCLI_UsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"check"}, {"check", "a", "b"}, {"test"}, {"eval", "--stage", "x"}, {"serve"},
		{"serve", "--config", ".", "--gc-headroom", "-2"}, {"serve", "--config", ".", "--store", "nope"}, {"serve", "--config", ".", "--data-dir", ""},
		{"serve", "--config", ".", "--data-sync", "sometimes"}, {"serve", "--config", ".", "--data-sync-interval", "0s"}} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("agentd %v exit %d, want 2", args, code)
		}
	}
}

// TestServe_GCHeadroomFlag: by default the collector's floor is a quarter of the
// memory store's budget; 0 keeps Go's default; a number of bytes is taken as it is.
func TestServe_GCHeadroomFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want uint64
	}{
		{nil, 128 << 20},
		{[]string{"--memory-bytes", "64000000"}, 16_000_000},
		{[]string{"--memory-bytes", "0"}, 128 << 20}, // the store's default budget
		{[]string{"--gc-headroom", "0"}, 0},
		{[]string{"--gc-headroom", "300000000", "--memory-bytes", "1000"}, 300_000_000},
	} {
		f, err := parseServeFlags(append([]string{"--config", "."}, c.args...), io.Discard, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := gcHeadroom(f); got != c.want {
			t.Errorf("%v: headroom %d, want %d", c.args, got, c.want)
		}
	}
}

// TestCLI_TestExample runs `agentd test` on every example: each one's Rego tests and
// pipeline cases pass.
func TestCLI_TestExample(t *testing.T) {
	examples, err := filepath.Glob(filepath.Join(repoRoot(t), "examples", "*", "hooks"))
	if err != nil || len(examples) < 3 {
		t.Fatalf("examples: %v %v", examples, err)
	}
	for _, hooks := range examples {
		dir := filepath.Dir(hooks)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			code, out, errOut := runCLI(t, "test", dir)
			if code != exitOK || !regexp.MustCompile(`(?m)^\d+ passed, 0 failed$`).MatchString(out) {
				t.Fatalf("test exit %d:\n%s%s", code, out, errOut)
			}
		})
	}
}

func TestCLI_TestReportsFailuresWithDiff(t *testing.T) {
	dir := copyExample(t, "stock-agent")
	writeFile(t, dir, "tests/wrong.yaml", "apiVersion: agentd.dev/v1\nkind: HookTests\ntests:\n  - name: wrong enrichment\n    stage: before_planning\n    given: {request: hi, metadata: {tenant: acme}}\n    expect: {enrichments: {rag_context: \"Tenant: beta\"}}\n")
	code, out, _ := runCLI(t, "test", dir)
	if code != exitFailed || !strings.Contains(out, "FAIL tests/wrong.yaml:4: wrong enrichment") ||
		!strings.Contains(out, `want "Tenant: beta"`) || !strings.Contains(out, `got  "Tenant: acme"`) ||
		!regexp.MustCompile(`(?m)^\d+ passed, 1 failed$`).MatchString(out) {
		t.Fatalf("test exit %d:\n%s", code, out)
	}
}

func TestCLI_Eval(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "plan.json")
	writeFile(t, dir, "plan.json", `{"request_id":"e1","request":"buy","plan":`+tradePlan+`}`)
	example := filepath.Join(repoRoot(t), "examples", "stock-agent")
	code, out, _ := runCLI(t, "eval", "--config", example, "--stage", "after_planning", "--input", input)
	if code != exitFailed || !strings.Contains(out, `"type": "required_after_planning"`) || !strings.Contains(out, `"code": "capability_not_allowed"`) {
		t.Fatalf("eval of a trade plan: exit %d\n%s", code, out)
	}
	writeFile(t, dir, "plan.json", `{"request_id":"e2","request":"quote","plan":`+quotePlan+`}`)
	if code, out, _ := runCLI(t, "eval", "--config", example, "--stage", "after_planning", "--input", input); code != exitOK || !strings.Contains(out, `"step_id": "step-1"`) {
		t.Fatalf("eval of a quote plan: exit %d\n%s", code, out)
	}
}

// eval builds its driver as serve does: with --decision-log-file every call of a
// script is one decision event, of its kind, under the decision id its answer names,
// masked by the config's decision_log section; a bad decision-log flag is a usage error.
func TestCLI_EvalWritesTheDecisionLog(t *testing.T) {
	dir := copyExample(t, "stock-agent")
	writeFile(t, dir, "hooks/40-log.yaml", "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: log}\ndecision_log:\n  mask: [metadata.email]\n")
	const address = "ann.secret@example.com"
	meta := `"metadata":{"tenant":"acme","email":"` + address + `"}`
	writeFile(t, dir, "script.json", `[
		{"call":"before_planning","body":{"request_id":"s1","request":"quote ACME",`+meta+`}},
		{"call":"after_planning","body":{"request_id":"s1","plan":`+quotePlan+`}},
		{"call":"operation","body":{"operation":"tool_call","call":{"request_id":"s1","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"ACME"}}}},
		{"call":"after_planning","body":{"request_id":"s2","request":"buy",`+meta+`,"plan":`+tradePlan+`}}]`)
	file := filepath.Join(t.TempDir(), "decisions.log")
	code, out, errOut := runCLI(t, "eval", "--config", dir, "--script", filepath.Join(dir, "script.json"), "--decision-log-file", file)
	var got scriptOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitFailed || len(got.Answers) != 4 {
		t.Fatalf("eval exit %d (want 1: the trade is rejected), %d answers, %v\n%s%s", code, len(got.Answers), err, out, errOut)
	}
	byID, events := logEvents(t, file)
	for i, kind := range []string{"stage", "stage", "check", "stage"} {
		id := decisionOf(t, string(got.Answers[i].Body))
		if k := byID[id]; len(k) != 1 || k[0] != kind {
			t.Errorf("answer %d (decision %s): events %v, want one %s event", i, id, k, kind)
		}
	}
	if len(events) != 4 || strings.Contains(readText(t, file), address) || !strings.Contains(readText(t, file), `"tenant":"acme"`) {
		t.Errorf("%d events, want 4, the address masked and the tenant kept:\n%s", len(events), readText(t, file))
	}
	if code, _, errOut := runCLI(t, "eval", "--config", dir, "--script", filepath.Join(dir, "script.json"), "--decision-log-format", "xml"); code != exitUsage || !strings.Contains(errOut, "agentd eval: unsupported --decision-log-format") {
		t.Errorf("eval with a bad --decision-log-format: exit %d\n%s", code, errOut)
	}
}

// A script is one JSON array: what follows it is an error, not ignored.
func TestCLI_EvalScriptIsOneValue(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "script.json", `[]]`)
	example := filepath.Join(repoRoot(t), "examples", "stock-agent")
	code, _, errOut := runCLI(t, "eval", "--config", example, "--script", filepath.Join(dir, "script.json"))
	if code != exitFailed || !strings.Contains(errOut, "goes on after its JSON array, at byte 2") {
		t.Fatalf("eval of a script with a stray bracket: exit %d\n%s", code, errOut)
	}
}

func TestCLI_Version(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != exitOK || !strings.Contains(out, "opa v1.22.3") || !strings.Contains(out, "cel-go v0.31.0") {
		t.Fatalf("version exit %d:\n%s", code, out)
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyExample copies an example config directory (following its policies symlink).
func copyExample(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cp", "-rL", filepath.Join(repoRoot(t), "examples", name), dst).CombinedOutput(); err != nil {
		t.Fatalf("copy example: %v %s", err, out)
	}
	return dst
}
