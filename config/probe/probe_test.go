package probe_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/probe"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// hookSet is a HookSet with the demo catalog (when catalog is true) and a required hook
// querying data.review.
func hookSet(catalog bool) string {
	doc := "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: probe}\n"
	if catalog {
		doc += `catalog:
  - namespace: demo-tools
    agent: stock-service
    capabilities:
      - {name: stock_quote}
      - {name: execute_trade}
`
	}
	return doc + `hooks:
  - name: review
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.review}
`
}

// seedTests are pipeline cases whose plans seed a directory without a catalog: a quote
// (allowed) alone, a trade alone, and both.
const seedTests = `apiVersion: agentd.dev/v1
kind: HookTests
tests:
  - name: quote
    stage: after_planning
    given:
      plan: {plan_id: q, steps: [{step_id: s1, agent_name: stock-service, namespace: demo-tools, metadata: {capability: stock_quote}}]}
    expect: {plan: allowed}
  - name: trade
    stage: after_planning
    given:
      plan: {plan_id: t, steps: [{step_id: s1, agent_name: stock-service, namespace: demo-tools, metadata: {capability: execute_trade}}]}
    expect: {plan: rejected}
  - name: quote then trade
    stage: after_planning
    given:
      plan: {plan_id: qt, steps: [{step_id: s1, agent_name: stock-service, namespace: demo-tools, metadata: {capability: stock_quote}},
                                 {step_id: s2, agent_name: stock-service, namespace: demo-tools, metadata: {capability: execute_trade}}]}
    expect: {plan: rejected}
`

// failOpen is the classic deny-list mistake: a step without a capability makes the
// rule's body undefined, so nothing is denied.
const failOpen = `package review

deny contains msg if {
	some step in input.plan.steps
	cap := step.metadata.capability
	cap == "execute_trade"
	msg := sprintf("%s is not allowed", [cap])
}
`

// fixed is failOpen with the obvious fix: every step needs a string capability, through
// a helper, so the check is never undefined.
const fixed = failOpen + `
deny contains "every step needs a capability" if {
	some step in input.plan.steps
	not has_capability(step)
}

has_capability(step) if is_string(step.metadata.capability)
`

func load(t *testing.T, files map[string]string) (string, *config.Generation) {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, files)
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return dir, gen
}

func run(t *testing.T, files map[string]string, opts probe.Options) *probe.Report {
	t.Helper()
	dir, gen := load(t, files)
	r, err := probe.Run(context.Background(), dir, gen, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

func TestRun_FailOpenDenyListIsFoundAndMinimized(t *testing.T) {
	r := run(t, map[string]string{"hooks/plan.yaml": hookSet(true), "policies/review.rego": failOpen}, probe.Options{})
	var missing *probe.Finding
	for i, f := range r.Findings {
		if f.Mutation == "capability" && strings.HasSuffix(f.Detail, "metadata.capability missing") {
			missing = &r.Findings[i]
		}
	}
	if missing == nil {
		t.Fatalf("no finding for a missing capability: %+v", r.Findings)
	}
	if missing.Identity != "demo-tools/stock-service/<no capability>" {
		t.Errorf("identity = %q", missing.Identity)
	}
	want := `{"plan_id":"probe","steps":[{"agent_name":"stock-service","metadata":{},"namespace":"demo-tools","step_id":"step-1"}]}`
	if got, _ := json.Marshal(missing.Plan); string(got) != want {
		t.Errorf("minimal plan = %s, want %s", got, want)
	}
	if len(missing.Misses) != 1 || missing.Misses[0].Source != "policies/review.rego:3" || missing.Misses[0].StoppedAt != "policies/review.rego:5" {
		t.Errorf("misses = %+v, want the deny rule at line 3 stopping at line 5", missing.Misses)
	}
	if !strings.Contains(missing.Rule, "policies/review.rego:3") {
		t.Errorf("rule = %q", missing.Rule)
	}

	r = run(t, map[string]string{"hooks/plan.yaml": hookSet(true), "policies/review.rego": fixed}, probe.Options{})
	if len(r.Findings) != 0 {
		t.Errorf("after the fix: %d findings, first %+v", len(r.Findings), r.Findings[0])
	}
	if r.Reviewed == 0 || r.Reviewed != r.Generated || r.Truncated {
		t.Errorf("reviewed %d of %d (truncated %v)", r.Reviewed, r.Generated, r.Truncated)
	}
}

// TestRun_MutationFindsItsMistake: each weak policy lets through exactly what one
// mutation builds.
func TestRun_MutationFindsItsMistake(t *testing.T) {
	tests := map[string]struct {
		catalog bool
		policy  string
		tests   string // the seeds' pipeline cases; seedTests without a catalog
	}{
		"hidden_step": {true, `package review
deny contains "no trades" if input.plan.steps[0].metadata.capability == "execute_trade"
`, ""},
		"later_phase": {true, `package review
deny contains "no trades" if {
	input.phase == 1
	some step in input.plan.steps
	step.metadata.capability != "stock_quote"
}
`, ""},
		"override_request_metadata": {true, `package review
deny contains "no trades" if {
	not input.metadata.approved
	some step in input.plan.steps
	step.metadata.capability != "stock_quote"
}
`, ""},
		"override_step_metadata": {true, `package review
deny contains "no trades" if {
	some step in input.plan.steps
	step.metadata.capability != "stock_quote"
	not step.metadata.approved
}
`, ""},
		"identity_case": {false, `package review
deny contains "no trades" if {
	some step in input.plan.steps
	step.metadata.capability == "execute_trade"
}
`, ""},
		"reorder_steps": {false, `package review
deny contains "no trades" if {
	steps := input.plan.steps
	steps[count(steps) - 1].metadata.capability == "execute_trade"
}
`, ""},
		"duplicate_step": {false, `package review
deny contains "one trade at most" if {
	trades := [s | some s in input.plan.steps; s.metadata.capability == "execute_trade"]
	count(trades) == 1
}
`, ""},
		"request_metadata": {true, `package review
deny contains msg if {
	some step in input.plan.steps
	step.metadata.capability != "stock_quote"
	msg := sprintf("tenant %s may not %s", [input.metadata.tenant, step.metadata.capability])
}
`, `apiVersion: agentd.dev/v1
kind: HookTests
tests:
  - name: acme may not trade
    stage: after_planning
    given:
      metadata: {tenant: acme}
      plan: {plan_id: t, steps: [{step_id: s1, agent_name: stock-service, namespace: demo-tools, metadata: {capability: execute_trade}}]}
    expect: {plan: rejected}
`},
	}
	for mutation, tc := range tests {
		t.Run(mutation, func(t *testing.T) {
			files := map[string]string{"hooks/plan.yaml": hookSet(tc.catalog), "policies/review.rego": tc.policy}
			if tc.tests == "" && !tc.catalog {
				tc.tests = seedTests
			}
			if tc.tests != "" {
				files["tests/seeds.yaml"] = tc.tests
			}
			r := run(t, files, probe.Options{})
			for _, f := range r.Findings {
				if f.Mutation == mutation {
					if f.Plan == nil || f.Rule == "" || f.Identity == "" {
						t.Errorf("incomplete finding %+v", f)
					}
					return
				}
			}
			t.Errorf("no %s finding; findings: %+v", mutation, r.Findings)
		})
	}
}

func TestRun_NothingToProbeIsAnInputError(t *testing.T) {
	tests := map[string]map[string]string{
		"no required hook": {"hooks/a.yaml": "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: a}\nhooks:\n" +
			"  - name: log\n    stage: after_planning\n    steps:\n      - log: {message: \"'plan'\"}\n"},
		"required hook without rego": {"hooks/a.yaml": "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: a}\nhooks:\n" +
			"  - name: tag\n    stage: after_planning\n    required: true\n    steps:\n      - plan.set_metadata: {key: reviewed, value: \"true\"}\n"},
	}
	for name, files := range tests {
		t.Run(name, func(t *testing.T) {
			dir, gen := load(t, files)
			_, err := probe.Run(context.Background(), dir, gen, probe.Options{})
			var ie *probe.InputError
			if !errors.As(err, &ie) || !errors.Is(err, probe.ErrNoRequiredPolicy) {
				t.Fatalf("Run error = %v, want an InputError for ErrNoRequiredPolicy", err)
			}
		})
	}
}

func TestRun_DeterministicForASeed(t *testing.T) {
	files := map[string]string{"hooks/plan.yaml": hookSet(true), "policies/review.rego": failOpen}
	encode := func(seed int64) string {
		r := run(t, files, probe.Options{Seed: seed, MaxPlans: 40})
		b, _ := json.Marshal(r)
		return string(b)
	}
	if a, b := encode(3), encode(3); a != b {
		t.Errorf("two runs with seed 3 differ:\n%s\n%s", a, b)
	}
	if encode(3) == encode(4) {
		t.Error("seeds 3 and 4 sampled the same plans")
	}
}

func TestRun_BoundedInCountAndTime(t *testing.T) {
	files := map[string]string{"hooks/plan.yaml": hookSet(true), "policies/review.rego": fixed}
	r := run(t, files, probe.Options{MaxPlans: 10})
	if r.Reviewed != 10 || r.Generated <= 10 {
		t.Errorf("reviewed %d of %d, want 10 of more", r.Reviewed, r.Generated)
	}
	dir, gen := load(t, files)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := probe.Run(ctx, dir, gen, probe.Options{})
	if err != nil || !r.Truncated || r.Reviewed != 0 {
		t.Errorf("cancelled run: reviewed %d, truncated %v, err %v", r.Reviewed, r.Truncated, err)
	}
}

// TestRun_ShippedPoliciesHaveNoFinding: the stock policies, through the examples, and
// the examples' own policies survive the probe.
func TestRun_ShippedPoliciesHaveNoFinding(t *testing.T) {
	for _, example := range []string{"stock-agent", "retrieval-agent", "openai-gateway"} {
		t.Run(example, func(t *testing.T) {
			dir := filepath.Join("..", "..", "examples", example)
			gen, err := config.Load(dir, config.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := probe.Run(context.Background(), dir, gen, probe.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Findings) > 0 || r.Truncated {
				t.Errorf("%d findings (truncated %v), first: %+v", len(r.Findings), r.Truncated, r.Findings[0])
			}
		})
	}
}

// tenantTests are pipeline cases of two tenants: acme may trade, globex may quote.
const tenantTests = `apiVersion: agentd.dev/v1
kind: HookTests
tests:
  - name: acme trades
    stage: after_planning
    given:
      metadata: {tenant: acme}
      plan: {plan_id: a, steps: [{step_id: s1, agent_name: stock-service, namespace: demo-tools, metadata: {capability: execute_trade}}]}
    expect: {plan: allowed}
  - name: globex quotes
    stage: after_planning
    given:
      metadata: {tenant: globex}
      plan: {plan_id: g, steps: [{step_id: s1, agent_name: stock-service, namespace: demo-tools, metadata: {capability: stock_quote}}]}
    expect: {plan: allowed}
`

// A per-tenant allow-list whose deny rule binds the tenant first: without one, the
// body is undefined and nothing is denied. Another tenant may use the capability, so
// only comparing with what the request's own tenant was allowed finds it.
const tenantFailOpen = `package review

allowed := {"acme": {"stock_quote", "execute_trade"}, "globex": {"stock_quote"}}

deny contains "not allowed for the tenant" if {
	tenant := input.metadata.tenant
	some step in input.plan.steps
	not step.metadata.capability in allowed[tenant]
}
`

// The catalog's plans are reviewed under each tenant of the tests, and a request whose
// tenant is missing, empty or unknown may get no more than its tenant was allowed: a
// globex trade that passes once the tenant is gone is a finding, although acme may
// trade; the policy that grants through a function of the tenant has none.
func TestRun_RequestMetadataMayGetNoMoreThanItsOwnContext(t *testing.T) {
	r := run(t, map[string]string{"hooks/plan.yaml": hookSet(true), "policies/review.rego": tenantFailOpen, "tests/seeds.yaml": tenantTests}, probe.Options{})
	var sources []string
	for _, s := range r.Seeds {
		sources = append(sources, s.Source)
	}
	if !slices.Contains(sources, `catalog demo-tools/stock-service/execute_trade with the metadata {"tenant":"globex"}`) {
		t.Errorf("the catalog's plans are not reviewed under globex: %q", sources)
	}
	var found *probe.Finding
	for i, f := range r.Findings {
		if f.Mutation == "request_metadata" && f.Identity == "demo-tools/stock-service/execute_trade" && strings.Contains(f.Seed, "globex") {
			found = &r.Findings[i]
		}
	}
	if found == nil {
		t.Fatalf("no request_metadata finding for a globex trade without its tenant: %+v", r.Findings)
	}
	if _, ok := found.Metadata["tenant"]; ok {
		t.Errorf("finding = %+v, want the tenant minimized away", found)
	}
	fixed := `package review

allowed := {"acme": {"stock_quote", "execute_trade"}, "globex": {"stock_quote"}}

deny contains "not allowed for the tenant" if {
	some step in input.plan.steps
	not granted(step)
}

granted(step) if step.metadata.capability in allowed[input.metadata.tenant]
`
	r = run(t, map[string]string{"hooks/plan.yaml": hookSet(true), "policies/review.rego": fixed, "tests/seeds.yaml": tenantTests}, probe.Options{})
	for _, f := range r.Findings {
		t.Errorf("after the fix: %s %s: %s", f.Mutation, f.Detail, f.Identity)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings with tenants in the tests: %q", r.Warnings)
	}
	r = run(t, map[string]string{"hooks/plan.yaml": hookSet(true), "policies/review.rego": fixed}, probe.Options{})
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "reads the request metadata, but no test or request has any") {
		t.Errorf("warnings without a test of a tenant: %q", r.Warnings)
	}
}
