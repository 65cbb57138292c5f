package config_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine/diag"
)

// fuzzHooksFile is where FuzzLoad writes its input.
const fuzzHooksFile = "hooks/x.yaml"

// fuzzMaxInput bounds a fuzz input, so every execution stays fast.
const fuzzMaxInput = 8 << 10

// fuzzPolicies is the small, fixed policies and data directory an input may load with,
// so rego steps and guards can compile.
var fuzzPolicies = map[string]string{
	"policies/agentd/plan.rego": `package agentd.plan

deny contains {"code": "namespace_not_allowed", "step_id": step.step_id, "message": "not allowed"} if {
	some step in input.plan.steps
	not data.agentd.allowlist[step.namespace]
}
`,
	"policies/agentd/guard.rego": `package agentd.guard

deny contains {"code": "trade_limit", "reason": "too big"} if input.call.parameters.amount > 10000
`,
	"data/agentd/allowlist.json": `{"allowlist": {"demo-tools": {"stock-service": ["stock_quote"]}}}`,
}

// fuzzYAMLSeeds exercise what the corpus does not: anchors, aliases, merge keys and tags.
var fuzzYAMLSeeds = []string{
	hookSet("anchors", `
hooks:
  - &h {name: a, stage: before_planning, steps: [{log: {message: "'a'"}}]}
  - {<<: [*h, {stage: after_synthesis}], name: b}
  - name: c
    stage: &s after_execution
    steps: &st
      - effect: {id: audit, summary: "string(size(result.steps))"}
  - {name: d, stage: *s, steps: *st, required: !!bool false}
`),
	hookSet("merged-guards", `
catalog:
  - &c {namespace: n, agent: a, capabilities: [{name: x, returns: [y]}]}
  - {<<: *c, agent: b}
guards:
  policy_revision: r
  rules:
    - &r {operation: turn, deny_if: "request == 'x'", code: c, reason: r}
    - {<<: *r, operation: inference, name: !!str guard-2}
    - {operation: tool_call, rego: {query: data.agentd.guard}}
`),
	hookSet("labels", `
labels:
  - &l {label: secret, when: "call.capability == 'read_secret'"}
  - {<<: *l, label: untrusted}
  - {label: big, when: "size(string(result)) > 10"}
guards:
  policy_revision: r
  rules:
    - {operation: tool_call, deny_if: "'secret' in labels && history.exists(h, 'big' in h.labels) && 'x' in call.labels", code: c, reason: r}
`),
}

// fuzzSeeds returns every hooks file of the invalid corpus and of the example.
func fuzzSeeds(f *testing.F) [][]byte {
	f.Helper()
	patterns := []string{
		filepath.Join(corpusDir, "*", "hooks", "*"),
		filepath.Join(exampleDir, "hooks", "*"),
	}
	var seeds [][]byte
	for _, pattern := range patterns {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				continue // the corpus has a dangling link on purpose
			}
			seeds = append(seeds, data)
		}
	}
	if len(seeds) < corpusSize {
		f.Fatalf("only %d seed files", len(seeds))
	}
	for _, s := range fuzzYAMLSeeds {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// FuzzLoad loads one hooks file, alone or beside a fixed policies directory. Load must
// not panic, and a failure must be a diag.List whose every entry has a known kind and,
// when it has a line, a line inside the file it names.
func FuzzLoad(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, hooks []byte, withPolicies bool) {
		if len(hooks) > fuzzMaxInput {
			t.Skip("input too large")
		}
		dir := t.TempDir()
		files := map[string][]byte{fuzzHooksFile: hooks}
		if withPolicies {
			for name, content := range fuzzPolicies {
				files[name] = []byte(content)
			}
		}
		for name, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gen, err := config.Load(dir, config.Options{})
		if err == nil {
			if gen == nil {
				t.Fatal("Load returned neither a generation nor an error")
			}
			return
		}
		list, ok := err.(diag.List)
		if !ok {
			t.Fatalf("Load error is %T, want diag.List: %v", err, err)
		}
		if len(list) == 0 {
			t.Fatal("Load returned an empty diag.List")
		}
		for _, e := range list {
			checkFuzzError(t, e, files)
		}
	})
}

func checkFuzzError(t *testing.T, e *diag.Error, files map[string][]byte) {
	t.Helper()
	if !isDiagKind(e.Kind) {
		t.Errorf("%v: unknown kind %q", e, e.Kind)
	}
	if e.Line < 0 || e.Column < 0 {
		t.Errorf("%v: negative position", e)
	}
	if e.Line == 0 {
		return
	}
	data, ok := files[e.File]
	if !ok {
		t.Errorf("%v: a position in a file the load was not given", e)
		return
	}
	// Lines end at LF, CRLF or a lone CR, as YAML counts them (and diag.Render shows them).
	lines := bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r")) - bytes.Count(data, []byte("\r\n")) + 1
	if e.Line > lines+1 {
		t.Errorf("%v: line %d is past the end of %s, which has %d lines", e, e.Line, e.File, lines)
	}
}
