package config_test

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

const exampleDir = "../examples/stock-agent"

var generationID = regexp.MustCompile(`^g-[0-9a-f]{16}$`)

func hookNames(hooks []config.HookInfo) []string {
	names := make([]string, len(hooks))
	for i, h := range hooks {
		names[i] = h.Name
	}
	return names
}

// toolCall starts a tool_call through the generation's guards and returns their verdict.
func toolCall(t *testing.T, gen *config.Generation, namespace, capability string, params map[string]any) error {
	t.Helper()
	_, finish, err := gen.Runner.Start(context.Background(), op.Call{
		Operation: op.ToolCall, RequestID: "req-1", StepID: "step-1",
		Namespace: namespace, AgentName: "stock-service", Capability: capability, Parameters: params,
	})
	if finish != nil {
		finish(op.Result{})
	}
	return err
}

func wantDenial(t *testing.T, err error, code string) {
	t.Helper()
	d, ok := op.AsDenial(err)
	if !ok || d.Code != code {
		t.Fatalf("guard verdict = %v, want a denial with code %s", err, code)
	}
}

func TestLoad_StockAgentExample(t *testing.T) {
	gen := mustLoad(t, exampleDir)
	if !generationID.MatchString(gen.ID) {
		t.Errorf("generation id %q does not match %s", gen.ID, generationID)
	}
	wantStages := map[engine.Stage][]string{
		engine.StageBeforePlanning: {"response-cache", "tenant-context"},
		engine.StageAfterPlanning:  {"allowed-operations"},
		engine.StageAfterExecution: {"execution-audit"},
		engine.StageAfterSynthesis: {"pii-redaction", "response-cache-store"},
	}
	for _, stage := range engine.Stages {
		if got := hookNames(gen.StageHooks(stage)); !slices.Equal(got, wantStages[stage]) {
			t.Errorf("%s hooks = %v, want %v", stage, got, wantStages[stage])
		}
		if got := pipelineOrder(gen, stage); !slices.Equal(got, wantStages[stage]) {
			t.Errorf("pipeline %s hooks = %v, want %v", stage, got, wantStages[stage])
		}
	}
	if name, ok := gen.Pipeline.RequiredHook(); !ok || name != "allowed-operations" {
		t.Errorf("RequiredHook() = %q, %v; want allowed-operations, true", name, ok)
	}
	for _, h := range gen.Hooks {
		if h.Required != (h.Name == "allowed-operations") {
			t.Errorf("hook %s: Required = %v", h.Name, h.Required)
		}
	}
	if gen.Catalog == nil {
		t.Error("Catalog is nil, want the stock-service catalog")
	}

	if gen.PolicyRevision != "trade-limits-v2" {
		t.Errorf("PolicyRevision = %q, want trade-limits-v2", gen.PolicyRevision)
	}
	wantGuards := []config.GuardInfo{
		{Name: "trade-amount-is-a-number", Operation: op.ToolCall, Code: "invalid_amount", Kind: "cel", File: "hooks/20-plan.yaml", Line: 28},
		{Name: "trade-limit", Operation: op.ToolCall, Effect: "require_approval", Code: "trade_limit", Kind: "cel", File: "hooks/20-plan.yaml", Line: 35},
	}
	if !reflect.DeepEqual(gen.Guards, wantGuards) {
		t.Errorf("Guards = %+v, want %+v", gen.Guards, wantGuards)
	}
	wantDenial(t, toolCall(t, gen, "demo-tools", "execute_trade", map[string]any{"amount": "NaN"}), "invalid_amount")
	wantDenial(t, toolCall(t, gen, "demo-tools", "execute_trade", map[string]any{"amount": 20000}), engine.DenialApprovalRequired)
	if err := toolCall(t, gen, "demo-tools", "execute_trade", map[string]any{"amount": 500}); err != nil {
		t.Errorf("a 500 trade: guard verdict = %v, want allowed", err)
	}

	for _, f := range gen.Files {
		if strings.HasSuffix(f, "_test.rego") {
			t.Errorf("Files lists the policy test %s", f)
		}
	}
	for _, want := range []string{"hooks/10-context.yaml", "policies/agentd/plan/plan.rego", "data/agentd/allowlist.json"} {
		if !slices.Contains(gen.Files, want) {
			t.Errorf("Files = %v, want it to contain %s", gen.Files, want)
		}
	}
}

// copyTree copies src to dst, following symlinks (the example links policies/).
func copyTree(t *testing.T, dst, src string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		st, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		if st.IsDir() {
			copyTree(t, d, s)
			continue
		}
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoad_GenerationIDFollowsContent(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, dir, exampleDir)
	first := mustLoad(t, dir)
	if again := mustLoad(t, dir); again.ID != first.ID {
		t.Fatalf("two loads of the same files: ids %s and %s", first.ID, again.ID)
	}
	if example := mustLoad(t, exampleDir); example.ID != first.ID {
		t.Errorf("a copy of the example has id %s, the example %s", first.ID, example.ID)
	}
	if len(first.Files) < 4 {
		t.Fatalf("Files = %v, want hooks, policies and data", first.Files)
	}
	seen := map[string]string{first.ID: "the original"}
	for _, name := range first.Files {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, filepath.FromSlash(name))
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			// A trailing newline changes the bytes, not the meaning, in every format.
			if err := os.WriteFile(p, append(slices.Clone(orig), '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			changed := mustLoad(t, dir)
			if other, dup := seen[changed.ID]; dup {
				t.Errorf("changing %s gives id %s, the same as %s", name, changed.ID, other)
			}
			seen[changed.ID] = name
			if err := os.WriteFile(p, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			if back := mustLoad(t, dir); back.ID != first.ID {
				t.Errorf("restoring %s gives id %s, want %s", name, back.ID, first.ID)
			}
		})
	}
}

func TestLoad_HooksFilesInLexicalOrder(t *testing.T) {
	dir := t.TempDir()
	hook := func(names ...string) string {
		var b strings.Builder
		b.WriteString("hooks:\n")
		for _, n := range names {
			b.WriteString("  - name: " + n + "\n    stage: before_planning\n    steps:\n      - log: {message: \"'" + n + "'\"}\n")
		}
		return b.String()
	}
	writeFiles(t, dir, map[string]string{
		"hooks/a.yaml":     hookSet("lower-a", hook("a-1", "a-2")),
		"hooks/B.yml":      hookSet("upper-b", hook("b-1")),
		"hooks/10-x.yaml":  hookSet("ten", hook("ten-1", "ten-2")),
		"hooks/2-x.yaml":   hookSet("two", hook("two-1")),
		"hooks/README.md":  "not a HookSet",
		"hooks/notes.json": "{not json",
	})
	gen := mustLoad(t, dir)
	want := []string{"ten-1", "ten-2", "two-1", "b-1", "a-1", "a-2"}
	if got := hookNames(gen.Hooks); !slices.Equal(got, want) {
		t.Errorf("hooks = %v, want %v (file names in byte order, then document order)", got, want)
	}
	if got := pipelineOrder(gen, engine.StageBeforePlanning); !slices.Equal(got, want) {
		t.Errorf("pipeline hooks = %v, want %v", got, want)
	}
	wantFiles := []string{"hooks/10-x.yaml", "hooks/2-x.yaml", "hooks/B.yml", "hooks/a.yaml"}
	if !slices.Equal(gen.Files, wantFiles) {
		t.Errorf("Files = %v, want %v", gen.Files, wantFiles)
	}
}

// configMapLayout writes files the way the kubelet mounts a ConfigMap: the content in
// a hidden, timestamped folder, ..data linking to it, and each top-level folder linking
// through ..data.
func configMapLayout(t *testing.T, dir, stamp string, files map[string]string) {
	t.Helper()
	writeFiles(t, filepath.Join(dir, stamp), files)
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(stamp, "..data")
	for _, sub := range []string{"hooks", "policies", "data"} {
		link(filepath.Join("..data", sub), sub)
	}
}

func TestLoad_KubernetesConfigMapLayout(t *testing.T) {
	dir := t.TempDir()
	configMapLayout(t, dir, "..2026_01_01", map[string]string{
		"hooks/plan.yaml": hookSet("plan", `
hooks:
  - name: review
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.agentd.plan}
`),
		"policies/plan.rego":         "package agentd.plan\n\ndeny contains \"not_listed\" if not data.agentd.allowlist\n",
		"data/agentd/allowlist.json": `{"allowlist": {"demo-tools": {"stock-service": ["stock_quote"]}}}`,
	})
	gen := mustLoad(t, dir)
	if got := hookNames(gen.Hooks); !slices.Equal(got, []string{"review"}) {
		t.Errorf("hooks = %v, want [review]", got)
	}
	wantFiles := []string{"data/agentd/allowlist.json", "hooks/plan.yaml", "policies/plan.rego"}
	if !slices.Equal(gen.Files, wantFiles) {
		t.Errorf("Files = %v, want %v (named by the links, not the timestamped folder)", gen.Files, wantFiles)
	}

	// The kubelet updates by writing a new folder and renaming a new ..data link over
	// the old one.
	writeFiles(t, filepath.Join(dir, "..2026_01_02"), map[string]string{
		"hooks/plan.yaml": hookSet("plan", `
hooks:
  - name: review-v2
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.agentd.plan}
`),
		"policies/plan.rego":         "package agentd.plan\n\ndeny contains \"not_listed\" if not data.agentd.allowlist\n",
		"data/agentd/allowlist.json": `{"allowlist": {}}`,
	})
	if err := os.Symlink("..2026_01_02", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	swapped := mustLoad(t, dir)
	if got := hookNames(swapped.Hooks); !slices.Equal(got, []string{"review-v2"}) {
		t.Errorf("after the swap: hooks = %v, want [review-v2]", got)
	}
	if swapped.ID == gen.ID {
		t.Errorf("after the swap: generation id %s did not change", swapped.ID)
	}
}

func TestLoad_HiddenFilesAreIgnored(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"hooks/x.yaml": hookSet("x", `
hooks:
  - name: audit
    stage: after_execution
    steps:
      - log: {message: "'done'"}
`),
		"hooks/.x.yaml.swp":            "\x00\x01 editor swap file",
		"hooks/.broken.yaml":           "hooks: [",
		"hooks/.git/config.yaml":       "not: [a, hookset",
		"policies/.draft.rego":         "package broken {",
		"policies/.old/plan.rego":      "package broken {",
		"data/.cache.json":             "{",
		"data/agentd/.backup/old.json": "[1, 2",
	})
	gen := mustLoad(t, dir)
	if want := []string{"hooks/x.yaml"}; !slices.Equal(gen.Files, want) {
		t.Errorf("Files = %v, want %v", gen.Files, want)
	}
}

func TestLoad_MissingConfigDirectory(t *testing.T) {
	for name, dir := range map[string]string{
		"missing": filepath.Join(t.TempDir(), "no-such-config"),
		"file":    filepath.Join(t.TempDir(), "config.yaml"),
	} {
		t.Run(name, func(t *testing.T) {
			if name == "file" {
				if err := os.WriteFile(dir, []byte("hooks: []\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			list := loadFails(t, dir)
			if kinds := list.Kinds(); !slices.Contains(kinds, diag.KindIO) || slices.ContainsFunc(kinds, func(k diag.Kind) bool { return k != diag.KindIO }) {
				t.Errorf("kinds = %v, want only %s:\n%v", kinds, diag.KindIO, list)
			}
		})
	}
}

// policyTests is a policy test file that would not compile with the runtime policies:
// it calls a function that does not exist.
const policyTests = "package agentd.guard_test\n\ntest_undefined if no_such_helper(1)\n"

func TestLoad_PolicyTestsAreNotInTheBundle(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"hooks/x.yaml": hookSet("x", `
guards:
  policy_revision: r1
  rules:
    - operation: turn
      rego: {query: data.agentd.guard}
`),
		"policies/agentd/guard.rego":      "package agentd.guard\n\ndeny contains \"blocked\" if input.call.request == \"blocked\"\n",
		"policies/agentd/guard_test.rego": policyTests,
	})
	gen := mustLoad(t, dir)
	if slices.Contains(gen.Files, "policies/agentd/guard_test.rego") {
		t.Errorf("Files = %v, lists the policy test", gen.Files)
	}

	writeFiles(t, dir, map[string]string{"hooks/x.yaml": hookSet("x", `
guards:
  policy_revision: r1
  rules:
    - operation: turn
      rego: {query: data.agentd.guard_test}
`)})
	list := loadFails(t, dir)
	if got := list.Kinds(); !slices.Equal(got, []diag.Kind{diag.KindUndefinedQuery}) {
		t.Errorf("querying the test package: kinds = %v, want [%s]:\n%v", got, diag.KindUndefinedQuery, list)
	}
}

func TestLoad_DataMountsAtItsFolder(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"hooks/x.yaml": hookSet("x", `
guards:
  policy_revision: r1
  rules:
    - operation: tool_call
      rego: {query: data.agentd.guard}
`),
		"policies/agentd/guard.rego": `package agentd.guard

deny contains {"code": "namespace_not_allowed", "reason": "not in the allow-list"} if {
	not data.agentd.allowlist[input.call.namespace]
}

deny contains {"code": "over_limit", "reason": "amount over the limit"} if {
	input.call.parameters.amount > data.agentd.limits.trade.max_amount
}

deny contains {"code": "mounted_by_name", "reason": "a file name became a path"} if {
	data.agentd.x
}
`,
		"data/agentd/x.json":            `{"allowlist": {"demo-tools": {"stock-service": ["stock_quote"]}}}`,
		"data/agentd/limits/trade.yaml": "trade:\n  max_amount: 100\n",
	})
	gen := mustLoad(t, dir)
	if err := toolCall(t, gen, "demo-tools", "stock_quote", map[string]any{"amount": 50}); err != nil {
		t.Errorf("an allow-listed call: verdict = %v, want allowed", err)
	}
	wantDenial(t, toolCall(t, gen, "other-tools", "stock_quote", map[string]any{"amount": 50}), "namespace_not_allowed")
	wantDenial(t, toolCall(t, gen, "demo-tools", "stock_quote", map[string]any{"amount": 500}), "over_limit")
}

func TestLoad_YAMLAnchorsAndMergeKeys(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"hooks/x.yaml": hookSet("anchors", `
hooks:
  - &audit
    name: audit-execution
    stage: after_execution
    when: &tenant has(metadata.tenant)
    steps:
      - &log
        log: {message: "'audit'", level: info}
  - <<: *audit
    name: audit-response
    stage: after_synthesis
  - name: review
    stage: after_planning
    required: True
    steps: [*log]
`)})
	gen := mustLoad(t, dir)
	want := []config.HookInfo{
		{Name: "audit-execution", Stage: engine.StageAfterExecution, When: "has(metadata.tenant)", Steps: []string{"log"}, File: "hooks/x.yaml", Line: 5},
		{Name: "audit-response", Stage: engine.StageAfterSynthesis, When: "has(metadata.tenant)", Steps: []string{"log"}, File: "hooks/x.yaml", Line: 12},
		{Name: "review", Stage: engine.StageAfterPlanning, Required: true, Steps: []string{"log"}, File: "hooks/x.yaml", Line: 15},
	}
	if !slices.EqualFunc(gen.Hooks, want, func(a, b config.HookInfo) bool {
		return a.Name == b.Name && a.Stage == b.Stage && a.Required == b.Required && a.When == b.When &&
			slices.Equal(a.Steps, b.Steps) && a.File == b.File && a.Line == b.Line
	}) {
		t.Errorf("Hooks =\n%+v\nwant\n%+v", gen.Hooks, want)
	}
	if name, ok := gen.Pipeline.RequiredHook(); !ok || name != "review" {
		t.Errorf("RequiredHook() = %q, %v; want review (required: True is a YAML true)", name, ok)
	}
}

// TestLoad_RegoGuardDefaultsAreOptional: the code and reason of a rego rule are
// defaults, each optional; a deny entry without a reason takes the rule's reason.
func TestLoad_RegoGuardDefaultsAreOptional(t *testing.T) {
	const ruleReason = "denied by the trade policy"
	tests := []struct {
		name, defaults, entry, wantReason string
	}{
		{"none", "", `{"code": "too_big", "reason": "over 10"}`, "over 10"},
		{"code only", "      code: trade_policy\n", `{"code": "too_big", "reason": "over 10"}`, "over 10"},
		{"reason only", "      reason: " + ruleReason + "\n", `{"code": "too_big"}`, ruleReason},
		{"both", "      code: trade_policy\n      reason: " + ruleReason + "\n", `{"code": "too_big"}`, ruleReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{
				"hooks/x.yaml": hookSet("x", `
guards:
  policy_revision: r1
  rules:
    - operation: tool_call
      rego: {query: data.agentd.guard}
`+tt.defaults),
				"policies/guard.rego": "package agentd.guard\n\ndeny contains " + tt.entry + " if input.call.parameters.amount > 10\n",
			})
			gen := mustLoad(t, dir)
			err := toolCall(t, gen, "demo-tools", "execute_trade", map[string]any{"amount": 11})
			wantDenial(t, err, "too_big")
			if d, _ := op.AsDenial(err); d.Reason != tt.wantReason {
				t.Errorf("denial reason = %q, want %q", d.Reason, tt.wantReason)
			}
		})
	}
}

// TestLoad_ErrorsAreNotFollowOns checks that a guard rule that fails to compile is
// reported once, not again as a policy revision without guards.
func TestLoad_ErrorsAreNotFollowOns(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"hooks/x.yaml": hookSet("x", `
guards:
  policy_revision: r1
  rules:
    - operation: turn
      deny_if: "request.size()"
      code: too_long
      reason: the request is too long
`)})
	list := loadFails(t, dir)
	if got := list.Kinds(); !slices.Equal(got, []diag.Kind{diag.KindCELTypeCheck}) {
		t.Errorf("kinds = %v, want [%s]:\n%v", got, diag.KindCELTypeCheck, list)
	}
}

func TestLoad_IOErrorsNameTheFileOnce(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"hooks/a.yaml": hookSet("a", "")})
	if err := os.Symlink("gone.yaml", filepath.Join(dir, "hooks", "b.yaml")); err != nil {
		t.Fatal(err)
	}
	list := loadFails(t, dir)
	if len(list) != 1 || list[0].Kind != diag.KindIO || list[0].File != "hooks/b.yaml" {
		t.Fatalf("errors = %v, want one io error for hooks/b.yaml", list)
	}
	if strings.Contains(list[0].Message, dir) {
		t.Errorf("message %q repeats the absolute path", list[0].Message)
	}
}

func TestLoad_CELCostLimitInEveryYAMLIntegerForm(t *testing.T) {
	for _, limit := range []string{"10000", "0x2710", "10_000"} {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"hooks/x.yaml": hookSet("x", "settings:\n  cel_cost_limit: "+limit+"\n")})
		mustLoad(t, dir)
	}
}

// A required hook may run in warn or audit mode only when the config says so; guards
// in audit mode allow what they would deny and report it.
func TestLoad_RuleModes(t *testing.T) {
	required := hookSet("review", `catalog:
  - {namespace: ns, agent: a, capabilities: [{name: c}]}
hooks:
  - name: review
    stage: after_planning
    required: true
    mode: audit
    steps:
      - plan.set_metadata: {key: k, value: "1"}
`)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"hooks/a.yaml": required})
	errs := loadFails(t, dir)
	if len(errs) != 1 || errs[0].Kind != diag.KindRequiredHook || !strings.Contains(errs[0].Message, "allow_audit_required") {
		t.Fatalf("errors = %v, want one required_hook error naming allow_audit_required", errs)
	}
	writeFiles(t, dir, map[string]string{"hooks/b.yaml": hookSet("settings", "settings: {allow_audit_required: true}\n")})
	gen := mustLoad(t, dir)
	if gen.Hooks[0].Mode != engine.RuleAudit {
		t.Fatalf("hook mode = %q", gen.Hooks[0].Mode)
	}

	dir = t.TempDir()
	writeFiles(t, dir, map[string]string{"hooks/g.yaml": hookSet("guards", `guards:
  policy_revision: r1
  rules:
    - name: big
      operation: tool_call
      mode: audit
      deny_if: "call.parameters.amount > 10"
      code: too_big
      reason: too big
`)})
	gen = mustLoad(t, dir)
	if gen.Guards[0].Mode != engine.RuleAudit {
		t.Fatalf("guard mode = %q", gen.Guards[0].Mode)
	}
	if err := toolCall(t, gen, "ns", "c", map[string]any{"amount": 100}); err != nil {
		t.Fatalf("a guard in audit mode denied: %v", err)
	}
}

// A declarative observer writes a log line when a matching operation begins and when it
// finishes, with the outcome; a call its condition does not match writes nothing.
func TestLoad_DeclarativeObserversLog(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"hooks/o.yaml": hookSet("observers", `observers:
  - name: trade-log
    operation: tool_call
    when: "call.capability == 'execute_trade'"
    log: {message: "'trade ' + call.step_id", level: warn}
`)})
	var logs strings.Builder
	gen, err := config.Load(dir, config.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, capability := range []string{"stock_quote", "execute_trade"} {
		call := op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-1", AgentName: "a", Namespace: "ns", Capability: capability}
		_, finish, err := gen.Runner.Start(context.Background(), call)
		if err != nil {
			t.Fatal(err)
		}
		finish(op.Result{Call: call, Outcome: op.Completed})
	}
	got := logs.String()
	if strings.Count(got, `"msg":"trade step-1"`) != 2 || !strings.Contains(got, `"at":"begin"`) ||
		!strings.Contains(got, `"at":"finish","operation":"tool_call","request_id":"r","step_id":"step-1","outcome":"completed"`) ||
		!strings.Contains(got, `"level":"WARN"`) {
		t.Fatalf("observer logs:\n%s", got)
	}
	if len(gen.Observers) != 1 || gen.Observers[0].Name != "trade-log" {
		t.Fatalf("observers = %+v", gen.Observers)
	}
}

// Compiled guards read the accepted step (call.step, input.step) when their expression
// or policy refers to it, and only then does the runner ask for it: a guard that never
// reads the step is marked IgnoresStep, so the driver need not build it.
func TestLoad_GuardsThatReadTheStepGetIt(t *testing.T) {
	policies := map[string]string{
		"policies/agentd/step.rego":  "package agentd.step\n\ndeny contains {\"code\": \"unapproved\", \"reason\": \"not approved\"} if not input.step.metadata.approved\n",
		"policies/agentd/plain.rego": "package agentd.plain\n\ndeny contains {\"code\": \"big\", \"reason\": \"too big\"} if input.call.parameters.amount > 10\n",
	}
	for _, tc := range []struct {
		name, rule string
		readsStep  bool
		code       string // the denial of a call whose step is not approved, "" for none
	}{
		{"cel reading the step", `deny_if: "call.step.instruction.contains('refund')"
      code: refund_step
      reason: the accepted step is a refund`, true, "refund_step"},
		{"cel reading the call", `deny_if: "call.parameters.amount > 10"
      code: big
      reason: too big`, false, ""},
		{"rego reading the step", `rego: {query: data.agentd.step}`, true, "unapproved"},
		{"rego reading the call", `rego: {query: data.agentd.plain}`, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"hooks/g.yaml": hookSet("g", `
guards:
  policy_revision: r1
  rules:
    - operation: tool_call
      `+tc.rule+"\n")}
			maps.Copy(files, policies)
			writeFiles(t, dir, files)
			gen := mustLoad(t, dir)
			if got := gen.Runner.ReadsStep(op.ToolCall); got != tc.readsStep {
				t.Errorf("ReadsStep = %v, want %v", got, tc.readsStep)
			}
			call := op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-1", Namespace: "ns", AgentName: "a", Capability: "refund",
				Parameters: map[string]any{"amount": 5.0},
				Step:       map[string]any{"step_id": "step-1", "instruction": "refund the order", "metadata": map[string]any{"approved": false}}}
			err := gen.Runner.Guard(context.Background(), call)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("verdict = %v, want allowed", err)
				}
				return
			}
			wantDenial(t, err, tc.code)
		})
	}
}

// Through the driver, a compiled guard that reads the accepted step gets it: a CEL
// guard denies the call of a step whose accepted instruction it refuses, and a Rego
// guard one whose accepted metadata lacks an approval; the other step runs.
func TestLoad_DriverGivesCompiledGuardsTheAcceptedStep(t *testing.T) {
	for name, rule := range map[string]string{
		"cel": `deny_if: "call.step.instruction.contains('refund')"
      code: refund_step
      reason: the accepted step is a refund`,
		"rego": `rego: {query: data.agentd.step}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{
				"hooks/g.yaml": hookSet("g", `
catalog:
  - namespace: shop
    agent: orders
    capabilities: [{name: lookup}]
guards:
  policy_revision: r1
  rules:
    - operation: tool_call
      `+rule+"\n"),
				"policies/agentd/step.rego": "package agentd.step\n\ndeny contains {\"code\": \"refund_step\", \"reason\": \"not approved\"} if not input.step.metadata.approved\n",
			})
			gen := mustLoad(t, dir)
			mem := store.NewMemory(store.MemoryOptions{})
			d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &gen.Generation}, States: mem, Records: mem})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			s, err := d.Open(ctx, "r", engine.Opening{Text: "orders"})
			if err != nil {
				t.Fatal(err)
			}
			step := func(id, instruction string, approved bool) engine.RoutingStep {
				return engine.RoutingStep{StepID: id, Namespace: "shop", AgentName: "orders", Instruction: instruction,
					Metadata: map[string]any{"capability": "lookup", "approved": approved, "parameters": map[string]any{"id": "o1"}}}
			}
			if _, err := s.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{
				step("step-1", "look the order up", true), step("step-2", "look it up for a refund", false)}}, 0); err != nil {
				t.Fatal(err)
			}
			for id, allowed := range map[string]bool{"step-1": true, "step-2": false} {
				res, err := d.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: "r", StepID: id, Namespace: "shop", AgentName: "orders",
					Capability: "lookup", Parameters: map[string]any{"id": "o1"}})
				if err != nil || res.Allowed != allowed || !allowed && res.Denial.Code != "refund_step" {
					t.Errorf("%s: %+v, %v; want allowed %v (refund_step)", id, res, err, allowed)
				}
			}
		})
	}
}

// Through the driver, a compiled guard sees the request's text and metadata as the
// README documents its input {call, request, metadata}: a CEL rule over
// metadata.loyalty_tier and a Rego rule over input.metadata deny a silver member's large
// booking and allow a gold member's, and a rule over the request text fires on it. The
// call carries none of them: they come from the request the call belongs to.
func TestLoad_DriverGivesGuardsTheRequestsMetadata(t *testing.T) {
	for name, rule := range map[string]string{
		"cel metadata": `deny_if: "metadata.loyalty_tier == 'silver' && call.parameters.amount > 1000"
      code: tier_limit
      reason: over the tier's limit`,
		"cel request": `deny_if: "request.contains('silver') && call.parameters.amount > 1000"
      code: tier_limit
      reason: over the tier's limit`,
		"rego metadata": `rego: {query: data.agentd.tier}`,
		"rego request":  `rego: {query: data.agentd.text}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{
				"hooks/g.yaml": hookSet("g", `
guards:
  policy_revision: r1
  rules:
    - operation: inference
      `+rule+"\n"),
				"policies/agentd/tier.rego": "package agentd.tier\n\ndeny contains {\"code\": \"tier_limit\", \"reason\": \"over\"} if {\n\tinput.metadata.loyalty_tier == \"silver\"\n\tinput.call.parameters.amount > 1000\n}\n",
				"policies/agentd/text.rego": "package agentd.text\n\ndeny contains {\"code\": \"tier_limit\", \"reason\": \"over\"} if {\n\tcontains(input.request, \"silver\")\n\tinput.call.parameters.amount > 1000\n}\n",
			})
			gen := mustLoad(t, dir)
			mem := store.NewMemory(store.MemoryOptions{})
			d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &gen.Generation}, States: mem, Records: mem})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for tier, allowed := range map[string]bool{"silver": false, "gold": true} {
				id := "r-" + tier
				s, err := d.Open(ctx, id, engine.Opening{Text: "book a flight for a " + tier + " member", Metadata: map[string]any{"loyalty_tier": tier}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.BeforePlanning(ctx); err != nil {
					t.Fatal(err)
				}
				res, err := d.Check(ctx, op.Call{Operation: op.Inference, RequestID: id, Model: "m", Parameters: map[string]any{"amount": 1500.0}})
				if err != nil || res.Allowed != allowed || !allowed && res.Denial.Code != "tier_limit" {
					t.Errorf("%s: %+v, %v; want allowed %v (tier_limit)", tier, res, err, allowed)
				}
			}
		})
	}
}

// A new plan rule rolls out by changing one word: a rego step with mode inside the
// required hook records what it would deny in audit, returns it as a warning in warn,
// and rejects the plan in enforce.
func TestLoad_RolloutOfAPlanRuleInsideTheRequiredHook(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		rejected bool
		warnings int
	}{{"audit", false, 0}, {"warn", false, 1}, {"enforce", true, 0}} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{
				"hooks/plan.yaml": hookSet("plan", `
catalog:
  - namespace: travel
    agent: booker
    capabilities: [{name: book}]
hooks:
  - name: plan-review
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.agentd.allow}
      - rego: {query: data.agentd.cabin, mode: `+tc.mode+`}
`),
				"policies/agentd/allow.rego": "package agentd.allow\n\ndeny contains {\"code\": \"not_allowed\", \"message\": \"no\"} if {\n\tsome s in input.plan.steps\n\ts.agent_name != \"booker\"\n}\n",
				"policies/agentd/cabin.rego": "package agentd.cabin\n\ndeny contains {\"code\": \"first_class\", \"step_id\": s.step_id, \"message\": \"first class needs approval\"} if {\n\tsome s in input.plan.steps\n\ts.metadata.parameters.cabin == \"first\"\n}\n",
			})
			gen := mustLoad(t, dir)
			mem := store.NewMemory(store.MemoryOptions{})
			d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &gen.Generation}, States: mem, Records: mem})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			s, err := d.Open(ctx, "r", engine.Opening{Text: "book first class"})
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{{StepID: "step-1", Namespace: "travel", AgentName: "booker",
				Instruction: "book", Metadata: map[string]any{"capability": "book", "parameters": map[string]any{"cabin": "first"}}}}}, 0)
			if rejected := err != nil; rejected != tc.rejected {
				t.Fatalf("rejected = %v (%v), want %v", rejected, err, tc.rejected)
			}
			if tc.rejected {
				if v := engine.ViolationsOf(err); len(v) != 1 || v[0].Code != "first_class" {
					t.Errorf("violations %+v, want first_class", v)
				}
				return
			}
			if len(out.Warnings) != tc.warnings {
				t.Errorf("warnings %+v, want %d", out.Warnings, tc.warnings)
			}
			rec, err := mem.Get(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			var found []engine.Finding
			for _, inv := range rec.PipelineHooks {
				found = append(found, inv.WouldDeny...)
			}
			if len(found) != 1 || len(found[0].Violations) != 1 || found[0].Violations[0].Code != "first_class" || string(found[0].Mode) != tc.mode {
				t.Errorf("would_deny %+v, want one first_class finding in %s mode", found, tc.mode)
			}
		})
	}
}
