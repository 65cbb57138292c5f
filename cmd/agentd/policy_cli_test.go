package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// failOpenConfig is a config directory whose hand-written deny-list fails open: a step
// without a capability makes the rule's body undefined, so nothing is denied.
func failOpenConfig(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, dir, "hooks/plan.yaml", `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: deny-list}
catalog:
  - namespace: demo-tools
    agent: stock-service
    capabilities: [{name: stock_quote}, {name: execute_trade}]
hooks:
  - name: review
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.review}
`)
	writeFile(t, dir, "policies/review.rego", `package review

deny contains msg if {
	some step in input.plan.steps
	step.metadata.capability == "execute_trade"
	msg := sprintf("step %s may not trade", [step.step_id])
}
`)
	return dir
}

// snapshot hashes every file under dir with its mode and modification time.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data := []byte{}
		if !d.IsDir() {
			if data, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		fmt.Fprintf(&b, "%s %v %d %x\n", p, info.Mode(), info.ModTime().UnixNano(), sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestCLI_ProbeFindsFailOpenDenyListThenPassesAfterTheFix(t *testing.T) {
	dir := failOpenConfig(t)
	before := snapshot(t, dir)
	code, out, errOut := runCLI(t, "probe", dir)
	if code != exitFailed {
		t.Fatalf("probe exit %d, want 1:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		`FINDING capability (step 1: metadata.capability missing): demo-tools/stock-service/<no capability> allowed; ` +
			`plan: {"plan_id":"probe","steps":[{"agent_name":"stock-service","metadata":{},"namespace":"demo-tools","step_id":"step-1"}]}`,
		"should have been caught by: data.review.deny (policies/review.rego:3) stopped at policies/review.rego:5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("probe output lacks %q:\n%s", want, out)
		}
	}
	cases := filepath.Join(t.TempDir(), "probe.yaml")
	if code, _, errOut := runCLI(t, "probe", "--json", "--cases", cases, dir); code != exitFailed {
		t.Errorf("probe --json exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "probe", "--cases", filepath.Join(dir, "tests", "probe.yaml"), dir); code != exitUsage || !strings.Contains(errOut, "never writes into the config directory") {
		t.Errorf("probe --cases inside the directory: exit %d: %s", code, errOut)
	}
	if after := snapshot(t, dir); after != before {
		t.Errorf("probe changed the config directory:\nbefore:\n%safter:\n%s", before, after)
	}

	// The probe's cases fail on the broken policy: they are the regression tests.
	if err := os.Rename(cases, filepath.Join(dir, "tests", "probe.yaml")); err != nil {
		if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(cases, filepath.Join(dir, "tests", "probe.yaml")); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errOut := runCLI(t, "test", dir); code != exitFailed || !strings.Contains(out, "FAIL tests/probe.yaml") {
		t.Errorf("test with the probe's cases on the broken policy: exit %d:\n%s%s", code, out, errOut)
	}

	writeFile(t, dir, "policies/review.rego", `package review

deny contains msg if {
	some step in input.plan.steps
	step.metadata.capability == "execute_trade"
	msg := sprintf("step %s may not trade", [step.step_id])
}

deny contains msg if {
	some step in input.plan.steps
	not has_capability(step)
	msg := sprintf("step %s has no capability", [step.step_id])
}

has_capability(step) if is_string(step.metadata.capability)
`)
	if code, out, errOut := runCLI(t, "probe", dir); code != exitOK || !strings.Contains(out, "0 finding(s)") {
		t.Errorf("probe after the fix: exit %d:\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "test", dir); code != exitOK {
		t.Errorf("test with the probe's cases after the fix: exit %d:\n%s%s", code, out, errOut)
	}
}

func TestCLI_ProbeBadInputExits2(t *testing.T) {
	noRequired := t.TempDir()
	writeFile(t, noRequired, "hooks/a.yaml", "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: a}\nhooks:\n"+
		"  - name: greet\n    stage: before_planning\n    steps:\n      - enrich: {key: rag_context, value: \"'hi'\"}\n")
	broken := t.TempDir()
	writeFile(t, broken, "hooks/a.yaml", "apiVersion: agentd.dev/v1\nkind: HookSet\nhooks: {}\n")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no required hook":  {[]string{"probe", noRequired}, "no required after_planning hook"},
		"config errors":     {[]string{"probe", broken}, "error(s)"},
		"no directory":      {[]string{"probe"}, "usage: agentd probe"},
		"two directories":   {[]string{"probe", noRequired, broken}, "usage: agentd probe"},
		"unknown flag":      {[]string{"probe", "--nope", noRequired}, "flag provided but not defined"},
		"missing directory": {[]string{"probe", filepath.Join(noRequired, "nope")}, "does not exist"},
	} {
		t.Run(name, func(t *testing.T) {
			before := snapshot(t, noRequired)
			code, out, errOut := runCLI(t, tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want 2 with %q:\n%s%s", code, tc.want, out, errOut)
			}
			if snapshot(t, noRequired) != before {
				t.Error("probe wrote into the config directory")
			}
		})
	}
}

// TestCLI_ProbeShippedExamples: the examples' required allow-lists hold against every
// mutation.
func TestCLI_ProbeShippedExamples(t *testing.T) {
	for _, example := range []string{"stock-agent", "retrieval-agent", "openai-gateway", "mcp-gateway", "mail-agent"} {
		code, out, errOut := runCLI(t, "probe", filepath.Join(repoRoot(t), "examples", example))
		if code != exitOK {
			t.Errorf("probe %s: exit %d:\n%s%s", example, code, out, errOut)
		}
	}
}

func TestCLI_EvalExplainNamesTheDenyRule(t *testing.T) {
	dir := failOpenConfig(t)
	writeFile(t, dir, "requests/trade.json", `{"request_id": "r1", "request": "buy", "plan": {"plan_id": "p", "steps": [
  {"step_id": "step-1", "agent_name": "stock-service", "namespace": "demo-tools", "metadata": {"capability": "execute_trade"}}]}}`)
	code, out, errOut := runCLI(t, "eval", "--explain", "--config", dir, "--stage", "after_planning", "--input", filepath.Join(dir, "requests", "trade.json"))
	if code != exitFailed {
		t.Fatalf("eval exit %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{`"location": "policies/review.rego:3"`, `"rule": "data.review.deny"`, `"capability": "execute_trade"`} {
		if !strings.Contains(out, want) {
			t.Errorf("eval --explain answer lacks %q:\n%s", want, out)
		}
	}
	if want := "explain data.review: denied produced by data.review.deny at policies/review.rego:3"; !strings.Contains(errOut, want) {
		t.Errorf("eval --explain summary lacks %q:\n%s", want, errOut)
	}
}

// TestCLI_OPARunsTheStockCLIInAUsersDirectory: `agentd opa test policies/ data/` in a
// directory outside this repository runs OPA's own test command.
func TestCLI_OPARunsTheStockCLIInAUsersDirectory(t *testing.T) {
	dir := copyExample(t, "stock-agent")
	cmd := exec.Command(binary, "opa", "test", "policies/", "data/")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "PASS: ") {
		t.Fatalf("agentd opa test: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	writeFile(t, dir, "policies/broken_test.rego", "package broken_test\n\ntest_fails if false\n")
	cmd = exec.Command(binary, "opa", "test", "policies/")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "FAIL: ") {
		t.Errorf("agentd opa test with a failing test: %v (want OPA's exit 2)\n%s", err, out)
	}
	if code, out, _ := runCLI(t, "opa", "version"); code != exitOK || !strings.Contains(out, "Version: 1.22.3") {
		t.Errorf("agentd opa version: exit %d: %s", code, out)
	}
}

// TestCLI_CheckWarnsOnWhatLetsPlansThrough: each kind of warning, printed with its
// position; --strict turns warnings into exit 1.
func TestCLI_CheckWarnsOnWhatLetsPlansThrough(t *testing.T) {
	required := "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: a}\nhooks:\n" +
		"  - name: review\n    stage: after_planning\n    required: true\n    steps:\n      - rego: {query: data.review}\n"
	tests := map[string]struct {
		files map[string]string
		want  string
	}{
		"no_required_hook": {map[string]string{"hooks/a.yaml": "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: a}\nhooks:\n" +
			"  - name: greet\n    stage: before_planning\n    steps:\n      - enrich: {key: rag_context, value: \"'hi'\"}\n"},
			"warning: no_required_hook: "},
		"unknown_folder": {map[string]string{"hooks/a.yaml": required, "policies/r.rego": "package review\n\ndeny contains \"x\" if false\n",
			"policy/r.rego": "package review\n"}, "warning: policy/: unknown_folder: agentd does not read policy/: did you mean policies/?"},
		"unprovided_data": {map[string]string{"hooks/a.yaml": required, "data/allowlist.json": `{"allowlist": {"demo-tools": ["stock_quote"]}}`,
			"policies/r.rego": "package review\n\ndeny contains \"x\" if {\n\tsome step in input.plan.steps\n\tnot step.namespace in object.keys(data.review.allowlist)\n}\n"},
			"warning: policies/r.rego:5: unprovided_data: data.review.allowlist"},
		"data_mounted_off": {map[string]string{"hooks/a.yaml": required, "data/review/allowlist/allowlist.json": `{"allowlist": {"demo-tools": ["stock_quote"]}}`,
			"policies/r.rego": "package review\n\ndeny contains \"x\" if {\n\tsome step in input.plan.steps\n\tnot data.review.allowlist[step.namespace]\n}\n"},
			"warning: policies/r.rego:5: data_mounted_off: data.review.allowlist[…] looks up the members of data.review.allowlist, whose only member is \"allowlist\" (from data/review/allowlist/allowlist.json)"},
		"no_deny": {map[string]string{"hooks/a.yaml": required, "policies/r.rego": "package review\n\nallow := true\n"},
			"warning: no_deny: query data.review names a package without a deny rule"},
		"undefined_read": {map[string]string{"hooks/a.yaml": required, "policies/r.rego": "package review\n\ndeny contains \"x\" if {\n" +
			"\tsome step in input.plan.steps\n\tstep.metadata.capability == \"execute_trade\"\n}\n"},
			"warning: policies/r.rego:3: undefined_read: this deny rule reads a member a plan or request may lack"},
		"optional_enforce": {map[string]string{"hooks/b.yaml": required, "hooks/a.yaml": "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: b}\nhooks:\n" +
			"  - name: cabin-rule\n    stage: after_planning\n    mode: enforce\n    steps:\n      - rego: {query: data.review}\n",
			"policies/r.rego": "package review\n\ndeny contains \"x\" if input.plan.plan_id == \"p\"\n"},
			"warning: hooks/a.yaml:5: optional_enforce: hook \"cabin-rule\" is optional, so its rego step (data.review) in mode: enforce rejects nothing"},
		"unrendered_key": {map[string]string{"hooks/b.yaml": required, "policies/r.rego": "package review\n\ndeny contains \"x\" if input.plan.plan_id == \"p\"\n",
			"hooks/a.yaml": "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: b}\nhooks:\n" +
				"  - name: tier\n    stage: before_planning\n    steps:\n      - enrich: {key: \"loyalty tier\", value: \"'gold'\"}\n"},
			"warning: hooks/a.yaml:5: unrendered_key: hook \"tier\" sets enrichment \"loyalty tier\", which is no tag name"},
		"rego_strict": {map[string]string{"hooks/a.yaml": required, "policies/r.rego": "package review\n\ndeny contains \"x\" if {\n\tx := 1\n\tinput.plan.steps == []\n}\n"},
			"warning: policies/r.rego:4: rego_strict: "},
	}
	for kind, tc := range tests {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				writeFile(t, dir, name, content)
			}
			code, out, errOut := runCLI(t, "check", dir)
			if code != exitOK || !strings.Contains(out, tc.want) {
				t.Errorf("check: exit %d, want 0 with %q:\n%s%s", code, tc.want, out, errOut)
			}
			if code, _, _ := runCLI(t, "check", "--strict", dir); code != exitFailed {
				t.Errorf("check --strict: exit %d, want 1", code)
			}
		})
	}
	for _, example := range []string{"stock-agent", "retrieval-agent", "openai-gateway", "mcp-gateway", "mail-agent"} {
		code, out, errOut := runCLI(t, "check", "--strict", filepath.Join(repoRoot(t), "examples", example))
		if code != exitOK || strings.Contains(out, "warning") {
			t.Errorf("check --strict %s: exit %d:\n%s%s", example, code, out, errOut)
		}
		if !strings.Contains(out, "data: data/") {
			t.Errorf("check %s prints no data mounts:\n%s", example, out)
		}
	}
}

func TestCLI_TestCoverageAndMinCoverage(t *testing.T) {
	example := filepath.Join(repoRoot(t), "examples", "retrieval-agent")
	code, out, errOut := runCLI(t, "test", "--coverage", example)
	if code != exitOK || !strings.Contains(out, "coverage policies/retrieval/plan/plan.rego: ") || !strings.Contains(out, "coverage: ") {
		t.Errorf("test --coverage: exit %d:\n%s%s", code, out, errOut)
	}
	dir := failOpenConfig(t)
	if code, out, errOut := runCLI(t, "test", "--min-coverage", "50", dir); code != exitFailed || !strings.Contains(errOut, "below --min-coverage 50.0%") {
		t.Errorf("test --min-coverage 50 on untested policies: exit %d:\n%s%s", code, out, errOut)
	}
	if code, _, _ := runCLI(t, "test", "--min-coverage", "0", dir); code != exitOK {
		t.Errorf("test --min-coverage 0: exit %d", code)
	}
}

// TestCLI_EveryCommandHasHelp: `agentd CMD --help` and `agentd help CMD` describe the
// command on stdout and exit 0.
func TestCLI_EveryCommandHasHelp(t *testing.T) {
	for _, c := range commands {
		for _, args := range [][]string{{c.name, "--help"}, {"help", c.name}, {c.name, "-h"}} {
			code, out, errOut := runCLI(t, args...)
			want := "usage: agentd " + c.name
			if c.name == "opa" {
				want = "agentd opa [command]"
			}
			if code != exitOK || !strings.Contains(out, want) {
				t.Errorf("agentd %v: exit %d, want 0 with %q on stdout:\n%s%s", args, code, want, out, errOut)
			}
		}
	}
	if code, _, errOut := runCLI(t, "chek", "dir"); code != exitUsage || !strings.Contains(errOut, `did you mean "check"?`) {
		t.Errorf("agentd chek: exit %d: %s", code, errOut)
	}
}

// TestCLI_SchemaWritesSchemasEditorsResolveLocally: the written schemas compile with a
// loader that reads only local files (their references resolve next to them), and
// the files init writes validate against them.
func TestCLI_SchemaWritesSchemasEditorsResolveLocally(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "schemas")
	if code, out, errOut := runCLI(t, "schema", dir); code != exitOK || !strings.Contains(out, "hookset.schema.json") {
		t.Fatalf("schema: exit %d:\n%s%s", code, out, errOut)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.FileLoader{})
	compiled := map[string]*jsonschema.Schema{}
	for _, name := range []string{"hookset.schema.json", "hooktests.schema.json", "routing_plan.schema.json"} {
		s, err := c.Compile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("compile %s from files alone: %v", name, err)
		}
		compiled[name] = s
	}
	for file, schema := range map[string]string{
		"starter/stock/hooks/20-plan.yaml":     "hookset.schema.json",
		"starter/stock/tests/pipeline.yaml":    "hooktests.schema.json",
		"starter/stock/hooks/30-response.yaml": "hookset.schema.json",
		"starter/minimal/hooks/plan.yaml":      "hookset.schema.json",
		"starter/minimal/tests/pipeline.yaml":  "hooktests.schema.json",
	} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "$schema=../schemas/"+schema) {
			t.Errorf("%s does not point at ../schemas/%s", file, schema)
		}
		if err := compiled[schema].Validate(jsonRoundTrip(t, doc)); err != nil {
			t.Errorf("%s against the written %s: %v", file, schema, err)
		}
	}
}

func jsonRoundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}
