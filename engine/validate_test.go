package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// vpCatalog is the catalog the validation tests run against.
func vpCatalog(t testing.TB) *Catalog {
	t.Helper()
	c, err := NewCatalog([]CatalogAgent{
		{Namespace: "demo-tools", Agent: "stock-service", Capabilities: []Capability{
			{Name: "stock_quote", Returns: []string{"price", "currency"}},
			{Name: "execute_trade"},
		}},
		{Namespace: "demo-tools", Agent: "news-service", Capabilities: []Capability{
			{Name: "headlines", Returns: []string{}},
		}},
		{Namespace: "other-tools", Agent: "stock-service", Capabilities: []Capability{
			{Name: "stock_history", Returns: []string{"series"}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// vpStep returns a demo-tools/stock-service step.
func vpStep(id, capability string, params map[string]any, deps ...string) RoutingStep {
	return RoutingStep{
		StepID: id, AgentName: "stock-service", Namespace: "demo-tools", Instruction: "run " + id,
		DependsOn: deps,
		Metadata:  map[string]any{"capability": capability, "parameters": params},
	}
}

func vpQuote(id string) RoutingStep {
	return vpStep(id, "stock_quote", map[string]any{"symbol": "AAPL"})
}

// vpTrade is a trade step whose price parameter is price (often a reference).
func vpTrade(id, price string, deps ...string) RoutingStep {
	return vpStep(id, "execute_trade", map[string]any{"symbol": "AAPL", "price": price}, deps...)
}

func vpImplicit(s RoutingStep, ids ...string) RoutingStep { s.ImplicitDeps = ids; return s }

func vpAgent(s RoutingStep, namespace, agent string) RoutingStep {
	s.Namespace, s.AgentName = namespace, agent
	return s
}

func vpMeta(s RoutingStep, key string, value any) RoutingStep {
	m := make(map[string]any, len(s.Metadata)+1)
	for k, v := range s.Metadata {
		m[k] = v
	}
	if value == nil {
		delete(m, key)
	} else {
		m[key] = value
	}
	s.Metadata = m
	return s
}

func vpPlan(steps ...RoutingStep) *RoutingPlan {
	return &RoutingPlan{PlanID: "plan-1", OriginalRequest: "buy AAPL", Mode: ModeAutonomous, Steps: steps}
}

func vpPhase(n int, steps ...RoutingStep) *RoutingPlan {
	p := vpPlan(steps...)
	p.PhaseNumber = n
	return p
}

// vpPrior is what phase 1 executed in the multi-phase cases.
func vpPrior() []RoutingStep {
	return []RoutingStep{
		vpQuote("step-1"),
		vpStep("step-2", "headlines", map[string]any{"topic": "AAPL"}),
	}
}

func vpBool(b bool) *bool { return &b }

// vpMany returns n quote steps with ids prefix1..prefixN, enough to take the validator
// off its small-plan linear lookups.
func vpMany(prefix string, n int) []RoutingStep {
	steps := make([]RoutingStep, n)
	for i := range steps {
		steps[i] = vpQuote(fmt.Sprintf("%s%d", prefix, i+1))
	}
	return steps
}

type vpCase struct {
	name  string
	plan  *RoutingPlan
	prior []RoutingStep
	code  PlanCode // "" means valid
	step  string   // expected PlanError.StepID
}

// vpRun validates every case against vpCatalog and checks rule, code and step.
func vpRun(t *testing.T, rule int, cases []vpCase) {
	t.Helper()
	catalog := vpCatalog(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidatePlan(tc.plan, catalog, tc.prior)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("ValidatePlan() = %v, want valid", err)
				}
				return
			}
			pe, ok := AsPlanError(err)
			if !ok {
				t.Fatalf("ValidatePlan() = %v, want *PlanError %s", err, tc.code)
			}
			if pe.Rule != rule || pe.Code != tc.code || pe.StepID != tc.step {
				t.Fatalf("ValidatePlan() = rule %d code %q step %q, want rule %d code %q step %q\n%v",
					pe.Rule, pe.Code, pe.StepID, rule, tc.code, tc.step, err)
			}
			if !errors.Is(err, ErrInvalidPlan) {
				t.Fatalf("errors.Is(%v, ErrInvalidPlan) = false", err)
			}
		})
	}
}

func TestValidatePlan_Rule1_EmptyPlanNeedsTerminalOrUserInput(t *testing.T) {
	notTerminal := func(p *RoutingPlan) *RoutingPlan { p.Terminal = vpBool(false); return p }
	asking := func(p *RoutingPlan, q string) *RoutingPlan {
		p.NeedsUserInput = &NeedsUserInput{Question: q, MissingFields: []string{"symbol"}}
		return p
	}
	vpRun(t, 1, []vpCase{
		{name: "nil plan", plan: nil, code: PlanCodeNilPlan},
		{name: "empty, terminal absent", plan: vpPlan()},
		{name: "empty, terminal true", plan: func() *RoutingPlan { p := vpPlan(); p.Terminal = vpBool(true); return p }()},
		{name: "empty, not terminal", plan: notTerminal(vpPlan()), code: PlanCodeEmptyPlan},
		{name: "empty slice, not terminal", plan: notTerminal(&RoutingPlan{Steps: []RoutingStep{}}), code: PlanCodeEmptyPlan},
		{name: "empty, not terminal, needs input", plan: asking(notTerminal(vpPlan()), "Which symbol?")},
		{name: "empty, not terminal, needs input without question", plan: asking(notTerminal(vpPlan()), "")},
		{name: "empty in a later phase", plan: notTerminal(vpPhase(2)), prior: vpPrior(), code: PlanCodeEmptyPlan},
		{name: "one step, not terminal", plan: notTerminal(vpPlan(vpQuote("step-1")))},
	})
}

func TestValidatePlan_Rule2_UnknownAgent(t *testing.T) {
	vpRun(t, 2, []vpCase{
		{name: "known agent", plan: vpPlan(vpQuote("step-1"))},
		{name: "unknown agent", plan: vpPlan(vpAgent(vpQuote("step-1"), "demo-tools", "crypto-service")),
			code: PlanCodeUnknownAgent, step: "step-1"},
		{name: "agent known only in another namespace", plan: vpPlan(vpAgent(vpQuote("step-1"), "demo-tools", "missing")),
			code: PlanCodeUnknownAgent, step: "step-1"},
		{name: "wrong namespace", plan: vpPlan(vpAgent(vpQuote("step-1"), "prod-tools", "stock-service")),
			code: PlanCodeUnknownAgent, step: "step-1"},
		{name: "empty namespace", plan: vpPlan(vpAgent(vpQuote("step-1"), "", "stock-service")),
			code: PlanCodeUnknownAgent, step: "step-1"},
		{name: "empty agent", plan: vpPlan(vpAgent(vpQuote("step-1"), "demo-tools", "")),
			code: PlanCodeUnknownAgent, step: "step-1"},
		{name: "first unknown in plan order", plan: vpPlan(vpQuote("step-1"),
			vpAgent(vpQuote("step-3"), "demo-tools", "x"), vpAgent(vpQuote("step-2"), "demo-tools", "y")),
			code: PlanCodeUnknownAgent, step: "step-3"},
		{name: "step without id", plan: vpPlan(vpAgent(vpQuote(""), "demo-tools", "x")),
			code: PlanCodeUnknownAgent, step: ""},
	})
}

func TestValidatePlan_Rule3_UnknownCapability(t *testing.T) {
	vpRun(t, 3, []vpCase{
		{name: "known capability", plan: vpPlan(vpQuote("step-1"))},
		{name: "unknown capability", plan: vpPlan(vpStep("step-1", "delete_account", nil)),
			code: PlanCodeUnknownCapability, step: "step-1"},
		{name: "capability of another agent", plan: vpPlan(vpStep("step-1", "headlines", nil)),
			code: PlanCodeUnknownCapability, step: "step-1"},
		{name: "capability of same agent in another namespace", plan: vpPlan(vpStep("step-1", "stock_history", nil)),
			code: PlanCodeUnknownCapability, step: "step-1"},
		{name: "empty string capability", plan: vpPlan(vpStep("step-1", "", nil)),
			code: PlanCodeUnknownCapability, step: "step-1"},
		{name: "case matters", plan: vpPlan(vpStep("step-1", "Stock_Quote", nil)),
			code: PlanCodeUnknownCapability, step: "step-1"},
		{name: "absent capability is not checked", plan: vpPlan(vpMeta(vpQuote("step-1"), "capability", nil))},
		{name: "non-string capability is not checked", plan: vpPlan(vpMeta(vpQuote("step-1"), "capability", 42.0))},
		{name: "no metadata", plan: vpPlan(RoutingStep{StepID: "step-1", AgentName: "stock-service", Namespace: "demo-tools"})},
		{name: "second step", plan: vpPlan(vpQuote("step-1"), vpStep("step-2", "nope", nil)),
			code: PlanCodeUnknownCapability, step: "step-2"},
	})
}

func TestValidatePlan_Rule4_DependsOnIsAcyclicWithinPlan(t *testing.T) {
	vpRun(t, 4, []vpCase{
		{name: "chain", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "1", "step-1"), vpTrade("step-3", "1", "step-2"))},
		{name: "forward dependency", plan: vpPlan(vpTrade("step-1", "1", "step-2"), vpQuote("step-2"))},
		{name: "diamond", plan: vpPlan(vpQuote("a"), vpTrade("b", "1", "a"), vpTrade("c", "1", "a"), vpTrade("d", "1", "b", "c"))},
		{name: "repeated dependency entry", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "1", "step-1", "step-1"))},
		{name: "missing step id", plan: vpPlan(vpQuote("step-1"), vpQuote("")),
			code: PlanCodeMissingStepID, step: ""},
		{name: "duplicate id reported on second use", plan: vpPlan(vpQuote("step-1"), vpQuote("step-2"), vpQuote("step-1")),
			code: PlanCodeDuplicateStepID, step: "step-1"},
		{name: "unknown dependency", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "1", "step-1", "step-9")),
			code: PlanCodeUnknownDependency, step: "step-2"},
		{name: "empty dependency", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "1", "")),
			code: PlanCodeUnknownDependency, step: "step-2"},
		{name: "prior-phase step in depends_on", plan: vpPhase(2, vpTrade("step-3", "1", "step-1")), prior: vpPrior(),
			code: PlanCodeUnknownDependency, step: "step-3"},
		{name: "duplicate before unknown dependency", plan: vpPlan(vpTrade("step-1", "1", "step-9"), vpQuote("step-2"), vpQuote("step-2")),
			code: PlanCodeDuplicateStepID, step: "step-2"},
		{name: "large plan", plan: vpPlan(append(vpMany("step-", 20), vpTrade("step-21", "1", "step-20", "step-1"))...)},
		{name: "duplicate in a large plan", plan: vpPlan(append(vpMany("step-", 20), vpQuote("step-3"))...),
			code: PlanCodeDuplicateStepID, step: "step-3"},
		{name: "unknown dependency in a large plan", plan: vpPlan(append(vpMany("step-", 20), vpTrade("step-21", "1", "step-22"))...),
			code: PlanCodeUnknownDependency, step: "step-21"},
		{name: "cycle in a large plan", plan: vpPlan(append(vpMany("step-", 20), vpTrade("step-21", "1", "step-22"),
			vpTrade("step-22", "1", "step-21"))...),
			code: PlanCodeDependencyCycle, step: "step-21"},
		{name: "self dependency", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "1", "step-2")),
			code: PlanCodeDependencyCycle, step: "step-2"},
		{name: "two-step cycle", plan: vpPlan(vpTrade("step-1", "1", "step-2"), vpTrade("step-2", "1", "step-1")),
			code: PlanCodeDependencyCycle, step: "step-1"},
		{name: "cycle not through the first step", plan: vpPlan(vpTrade("step-1", "1", "step-2"),
			vpTrade("step-2", "1", "step-3"), vpTrade("step-3", "1", "step-4"), vpTrade("step-4", "1", "step-2")),
			code: PlanCodeDependencyCycle, step: "step-2"},
		{name: "first step on a cycle in plan order", plan: vpPlan(vpQuote("step-1"),
			vpTrade("step-2", "1", "step-5"), vpTrade("step-3", "1", "step-4"), vpTrade("step-4", "1", "step-3"),
			vpTrade("step-5", "1", "step-1")),
			code: PlanCodeDependencyCycle, step: "step-3"},
	})
}

func TestValidatePlan_Rule4_CycleMessage(t *testing.T) {
	plan := vpPlan(vpQuote("step-1"), vpTrade("step-2", "1", "step-3"), vpTrade("step-3", "1", "step-4"), vpTrade("step-4", "1", "step-2"))
	err := ValidatePlan(plan, nil, nil)
	want := `plan rule 4 (dependency_cycle): step "step-2": depends_on forms a cycle: "step-2" -> "step-3" -> "step-4" -> "step-2"`
	if err == nil || err.Error() != want {
		t.Fatalf("error =\n %v\nwant\n %s", err, want)
	}

	var long []RoutingStep
	for i := range 20 {
		long = append(long, vpTrade(fmt.Sprintf("s%d", i), "1", fmt.Sprintf("s%d", (i+1)%20)))
	}
	err = ValidatePlan(vpPlan(long...), nil, nil)
	if pe, ok := AsPlanError(err); !ok || pe.Code != PlanCodeDependencyCycle || pe.StepID != "s0" ||
		!strings.HasSuffix(pe.Message, `"s9" -> ...`) {
		t.Fatalf("long cycle error = %v", err)
	}
}

func TestValidatePlan_Rule5_ReferencesAreWellFormed(t *testing.T) {
	withParams := func(params any) RoutingStep {
		return vpMeta(vpStep("step-2", "execute_trade", nil, "step-1"), "parameters", params)
	}
	deep := any("{{step-1.response.data.price}}")
	for range 600 {
		deep = []any{deep}
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	vpRun(t, 5, []vpCase{
		{name: "well formed", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1.response.data.price}}", "step-1"))},
		{name: "non-step tokens ignored", plan: vpPlan(vpQuote("step-1"),
			withParams(map[string]any{"note": "{{user.name}} {{ .Values.x }} {{Step-1}}"}))},
		{name: "keys are not scanned", plan: vpPlan(vpQuote("step-1"), withParams(map[string]any{"{{step-1}}": "x"}))},
		{name: "id only", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1}}", "step-1")),
			code: PlanCodeMalformedReference, step: "step-2"},
		{name: "trailing dot", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1.}}", "step-1")),
			code: PlanCodeMalformedReference, step: "step-2"},
		{name: "empty segment", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1..price}}", "step-1")),
			code: PlanCodeMalformedReference, step: "step-2"},
		{name: "unclosed", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "at {{step-1.response.data.price", "step-1")),
			code: PlanCodeMalformedReference, step: "step-2"},
		{name: "whitespace inside braces", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{ step-1.response }}", "step-1")),
			code: PlanCodeMalformedReference, step: "step-2"},
		{name: "nested in list", plan: vpPlan(vpQuote("step-1"),
			withParams(map[string]any{"legs": []any{map[string]any{"px": "{{step-1.response.data.price}}"}, "{{step-1}}"}})),
			code: PlanCodeMalformedReference, step: "step-2"},
		{name: "parameters that are a string", plan: vpPlan(vpQuote("step-1"), withParams("{{step-1}}")),
			code: PlanCodeMalformedReference, step: "step-2"},
		{name: "parameters of a typed map", plan: vpPlan(vpQuote("step-1"), withParams(map[string]string{"p": "{{step-1.}}"})),
			code: PlanCodeMalformedReference, step: "step-2"},
		{name: "first step in plan order", plan: vpPlan(vpQuote("step-1"), vpTrade("step-3", "{{step-1..x}}", "step-1"),
			vpTrade("step-2", "{{step-1}}", "step-1")),
			code: PlanCodeMalformedReference, step: "step-3"},
		{name: "too deep to scan", plan: vpPlan(vpQuote("step-1"), withParams(map[string]any{"d": deep})),
			code: PlanCodeUnscannableParameters, step: "step-2"},
		{name: "parameters containing themselves", plan: vpPlan(vpQuote("step-1"), withParams(cyclic)),
			code: PlanCodeUnscannableParameters, step: "step-2"},
	})
}

func TestValidatePlan_Rule5_ReportsFirstTokenInSortedKeyOrder(t *testing.T) {
	params := map[string]any{"zeta": "{{step-1}}", "alpha": []any{"ok", "{{step-1.}}"}, "mid": "{{step-1..x}}"}
	plan := vpPlan(vpQuote("step-1"), vpMeta(vpStep("step-2", "execute_trade", nil, "step-1"), "parameters", params))
	want := `plan rule 5 (malformed_reference): step "step-2": malformed reference "{{step-1.}}" at parameters/alpha/1: empty path segment`
	for range 50 {
		if err := ValidatePlan(plan, nil, nil); err == nil || err.Error() != want {
			t.Fatalf("error =\n %v\nwant\n %s", err, want)
		}
	}
}

func TestValidatePlan_Rule6_ReferencesAreDeclared(t *testing.T) {
	ref1 := "{{step-1.response.data.price}}"
	vpRun(t, 6, []vpCase{
		{name: "declared same-plan reference", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", ref1, "step-1"))},
		{name: "declared prior-phase reference", plan: vpPhase(2, vpImplicit(vpTrade("step-3", ref1), "step-1")), prior: vpPrior()},
		{name: "both kinds", plan: vpPhase(2, vpQuote("step-3"), vpImplicit(vpStep("step-4", "execute_trade",
			map[string]any{"a": ref1, "b": "{{step-3.response.data.price}}"}, "step-3"), "step-1")), prior: vpPrior()},
		{name: "self reference", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-2.response.data.price}}", "step-1")),
			code: PlanCodeSelfReference, step: "step-2"},
		{name: "same-plan reference not in depends_on", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", ref1)),
			code: PlanCodeUndeclaredDependency, step: "step-2"},
		{name: "same-plan reference listed in implicit_deps only", plan: vpPlan(vpQuote("step-1"), vpImplicit(vpTrade("step-2", ref1), "step-1")),
			code: PlanCodeUndeclaredDependency, step: "step-2"},
		{name: "prior-phase reference not in implicit_deps", plan: vpPhase(2, vpTrade("step-3", ref1)), prior: vpPrior(),
			code: PlanCodeUndeclaredImplicitDependency, step: "step-3"},
		{name: "implicit_deps names a same-plan step", plan: vpPlan(vpQuote("step-1"), vpImplicit(vpTrade("step-2", ref1, "step-1"), "step-1")),
			code: PlanCodeInvalidImplicitDependency, step: "step-2"},
		{name: "implicit_deps names a missing step", plan: vpPhase(2, vpImplicit(vpTrade("step-3", ref1), "step-1", "step-7")), prior: vpPrior(),
			code: PlanCodeInvalidImplicitDependency, step: "step-3"},
		{name: "implicit_deps in phase 1", plan: vpPlan(vpImplicit(vpTrade("step-1", "10"), "step-0")),
			code: PlanCodeInvalidImplicitDependency, step: "step-1"},
		{name: "implicit_deps entry unreferenced", plan: vpPhase(2, vpImplicit(vpTrade("step-3", ref1), "step-1", "step-2")), prior: vpPrior(),
			code: PlanCodeInvalidImplicitDependency, step: "step-3"},
		{name: "implicit_deps referenced by another step only", plan: vpPhase(2, vpImplicit(vpTrade("step-3", ref1), "step-1"),
			vpImplicit(vpTrade("step-4", "10"), "step-1")), prior: vpPrior(),
			code: PlanCodeInvalidImplicitDependency, step: "step-4"},
		{name: "unknown target listed in implicit_deps", plan: vpPlan(vpImplicit(vpTrade("step-2", "{{step-9.response}}"), "step-9")),
			code: PlanCodeInvalidImplicitDependency, step: "step-2"},
	})
	// A reference to a step that exists nowhere passes rule 6 and fails rule 7.
	err := ValidatePlan(vpPlan(vpTrade("step-2", "{{step-9.response}}")), vpCatalog(t), nil)
	if pe, ok := AsPlanError(err); !ok || pe.Rule != 7 || pe.Code != PlanCodeUnknownReferenceTarget {
		t.Fatalf("reference to an unknown step = %v, want rule 7 unknown_reference_target", err)
	}
}

func TestValidatePlan_Rule7_ReferenceTargetsAndReturnFields(t *testing.T) {
	news := vpAgent(vpStep("step-1", "headlines", map[string]any{"topic": "AAPL"}), "demo-tools", "news-service")
	vpRun(t, 7, []vpCase{
		{name: "declared return field", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1.response.data.price}}", "step-1"))},
		{name: "nested below a declared field", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1.response.data.price.amount}}", "step-1"))},
		{name: "not under response.data", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1.response.status}}", "step-1"))},
		{name: "response.data itself", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1.response.data}}", "step-1"))},
		{name: "capability without returns", plan: vpPlan(vpStep("step-1", "execute_trade", nil),
			vpTrade("step-2", "{{step-1.response.data.anything}}", "step-1"))},
		{name: "capability with empty returns", plan: vpPlan(news, vpTrade("step-2", "{{step-1.response.data.anything}}", "step-1"))},
		{name: "target without capability", plan: vpPlan(vpMeta(vpQuote("step-1"), "capability", nil),
			vpTrade("step-2", "{{step-1.response.data.anything}}", "step-1"))},
		{name: "unknown return field", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1.response.data.volume}}", "step-1")),
			code: PlanCodeUnknownReturnField, step: "step-2"},
		{name: "return fields are case sensitive", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1.response.data.Price}}", "step-1")),
			code: PlanCodeUnknownReturnField, step: "step-2"},
		{name: "prior-phase target's returns", plan: vpPhase(2, vpImplicit(vpTrade("step-3", "{{step-1.response.data.volume}}"), "step-1")),
			prior: vpPrior(), code: PlanCodeUnknownReturnField, step: "step-3"},
		{name: "prior-phase target no longer in the catalog", plan: vpPhase(2, vpImplicit(vpTrade("step-3", "{{step-1.response.data.volume}}"), "step-1")),
			prior: []RoutingStep{vpAgent(vpQuote("step-1"), "retired", "stock-service")}},
		{name: "unknown target", plan: vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-9.response.data.price}}", "step-1")),
			code: PlanCodeUnknownReferenceTarget, step: "step-2"},
		{name: "unknown target in phase 2", plan: vpPhase(2, vpTrade("step-3", "{{step-7.response}}")), prior: vpPrior(),
			code: PlanCodeUnknownReferenceTarget, step: "step-3"},
		{name: "unknown return field of one of many prior steps", plan: vpPhase(2,
			vpImplicit(vpTrade("step-b", "{{step-p20.response.data.volume}}"), "step-p20")),
			prior: vpMany("step-p", 20), code: PlanCodeUnknownReturnField, step: "step-b"},
		{name: "existence before returns in the same step", plan: vpPlan(vpQuote("step-1"), vpStep("step-2", "execute_trade",
			map[string]any{"a": "{{step-1.response.data.volume}}", "b": "{{step-8.response}}"}, "step-1")),
			code: PlanCodeUnknownReturnField, step: "step-2"},
	})
}

func TestValidatePlan_Rule8_NoRepeatedStepIDsAcrossPhases(t *testing.T) {
	vpRun(t, 8, []vpCase{
		{name: "fresh ids", plan: vpPhase(2, vpQuote("step-3")), prior: vpPrior()},
		{name: "phase 2 without prior steps", plan: vpPhase(2, vpQuote("step-1"))},
		{name: "repeated id", plan: vpPhase(2, vpQuote("step-3"), vpQuote("step-2")), prior: vpPrior(),
			code: PlanCodeRepeatedStepID, step: "step-2"},
		{name: "prior steps make it phase 2+", plan: vpPlan(vpQuote("step-1")), prior: vpPrior(),
			code: PlanCodeRepeatedStepID, step: "step-1"},
		{name: "first repeat in plan order", plan: vpPhase(3, vpQuote("step-4"), vpQuote("step-2"), vpQuote("step-1")), prior: vpPrior(),
			code: PlanCodeRepeatedStepID, step: "step-2"},
		{name: "many prior steps", plan: vpPhase(2, vpQuote("step-a"), vpImplicit(vpTrade("step-b", "{{step-p20.response.data.price}}"), "step-p20")),
			prior: vpMany("step-p", 20)},
		{name: "repeated id among many prior steps", plan: vpPhase(2, vpQuote("step-a"), vpQuote("step-p17")),
			prior: vpMany("step-p", 20), code: PlanCodeRepeatedStepID, step: "step-p17"},
		{name: "repeated id shadows the prior step for references", plan: vpPhase(2, vpQuote("step-1"),
			vpTrade("step-3", "{{step-1.response.data.price}}", "step-1")), prior: vpPrior(),
			code: PlanCodeRepeatedStepID, step: "step-1"},
	})
}

func TestValidatePlan_FirstFailureWins(t *testing.T) {
	catalog := vpCatalog(t)
	tests := []struct {
		name string
		plan *RoutingPlan
		rule int
		code PlanCode
		step string
	}{
		{"rule 2 in a later step beats rule 3 in an earlier one",
			vpPlan(vpStep("step-1", "nope", nil), vpQuote("step-2"), vpAgent(vpQuote("step-3"), "x", "y")),
			2, PlanCodeUnknownAgent, "step-3"},
		{"rule 3 beats rule 4",
			vpPlan(vpQuote("step-1"), vpQuote("step-1"), vpStep("step-2", "nope", nil)),
			3, PlanCodeUnknownCapability, "step-2"},
		{"rule 4 beats rule 5",
			vpPlan(vpTrade("step-1", "{{step-1}}"), vpTrade("step-2", "1", "step-9")),
			4, PlanCodeUnknownDependency, "step-2"},
		{"rule 4 cycle beats rule 6 self reference",
			vpPlan(vpTrade("step-1", "{{step-1.response}}", "step-1")),
			4, PlanCodeDependencyCycle, "step-1"},
		{"rule 5 in a later step beats rule 6 in an earlier one",
			vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1.response}}"), vpTrade("step-3", "{{step-1}}", "step-1")),
			5, PlanCodeMalformedReference, "step-3"},
		{"rule 6 beats rule 7",
			vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-9.response}}", "step-1"), vpTrade("step-3", "{{step-1.response}}")),
			6, PlanCodeUndeclaredDependency, "step-3"},
		{"rule 7 beats rule 8",
			func() *RoutingPlan {
				return vpPhase(2, vpQuote("step-1"), vpTrade("step-3", "{{step-1.response.data.volume}}", "step-1"))
			}(),
			7, PlanCodeUnknownReturnField, "step-3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := ValidatePlan(tt.plan, catalog, vpPrior())
			pe, ok := AsPlanError(first)
			if !ok || pe.Rule != tt.rule || pe.Code != tt.code || pe.StepID != tt.step {
				t.Fatalf("ValidatePlan() = %v, want rule %d %s on %q", first, tt.rule, tt.code, tt.step)
			}
			for range 20 {
				if again := ValidatePlan(tt.plan, catalog, vpPrior()); again.Error() != first.Error() {
					t.Fatalf("not deterministic: %v then %v", first, again)
				}
			}
		})
	}
}

func TestValidatePlan_DoesNotMutate(t *testing.T) {
	catalog := vpCatalog(t)
	agentsBefore := cloneAgents(catalog.agents)
	plans := []*RoutingPlan{
		vpPhase(2,
			vpImplicit(vpStep("step-3", "execute_trade", map[string]any{
				"legs":  []any{map[string]any{"px": "{{step-1.response.data.price}}"}, "x"},
				"extra": map[string]any{"b": "2", "a": []any{1.0, true, nil}},
			}), "step-1"),
			vpTrade("step-4", "{{step-3.response.data.fill}}", "step-3")),
		vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1}}", "step-1")),
		vpPlan(vpTrade("step-1", "1", "step-2"), vpTrade("step-2", "1", "step-1")),
		vpPhase(2, vpImplicit(vpTrade("step-3", "{{step-1.response.data.volume}}"), "step-1", "step-2")),
	}
	for i, plan := range plans {
		prior := vpPrior()
		before, _ := json.Marshal(struct {
			P *RoutingPlan
			R []RoutingStep
		}{plan, prior})
		snapshot := vpDeepCopyPlan(t, plan)
		_ = ValidatePlan(plan, catalog, prior)
		after, _ := json.Marshal(struct {
			P *RoutingPlan
			R []RoutingStep
		}{plan, prior})
		if string(before) != string(after) {
			t.Fatalf("plan %d mutated:\n%s\n%s", i, before, after)
		}
		if !reflect.DeepEqual(plan, snapshot) {
			t.Fatalf("plan %d mutated (types or nil-ness)", i)
		}
	}
	if !reflect.DeepEqual(catalog.agents, agentsBefore) {
		t.Fatal("catalog mutated")
	}
}

func cloneAgents(agents []CatalogAgent) []CatalogAgent {
	out := make([]CatalogAgent, len(agents))
	for i, a := range agents {
		out[i] = cloneCatalogAgent(a)
	}
	return out
}

// vpDeepCopyPlan copies the slices and maps the validator could touch.
func vpDeepCopyPlan(t *testing.T, p *RoutingPlan) *RoutingPlan {
	t.Helper()
	var copyValue func(v any) any
	copyValue = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			m := make(map[string]any, len(t))
			for k, e := range t {
				m[k] = copyValue(e)
			}
			return m
		case []any:
			s := make([]any, len(t))
			for i, e := range t {
				s[i] = copyValue(e)
			}
			return s
		}
		return v
	}
	c := *p
	c.Steps = nil
	for _, s := range p.Steps {
		s.DependsOn = append([]string(nil), s.DependsOn...)
		s.ImplicitDeps = append([]string(nil), s.ImplicitDeps...)
		if len(s.DependsOn) == 0 {
			s.DependsOn = nil
		}
		if len(s.ImplicitDeps) == 0 {
			s.ImplicitDeps = nil
		}
		if s.Metadata != nil {
			s.Metadata = copyValue(s.Metadata).(map[string]any)
		}
		c.Steps = append(c.Steps, s)
	}
	return &c
}

func TestValidatePlan_NilCatalogSkipsCatalogRules(t *testing.T) {
	catalog := vpCatalog(t)
	tests := []struct {
		name string
		plan *RoutingPlan
		code PlanCode // with the catalog
	}{
		{"unknown agent", vpPlan(vpAgent(vpQuote("step-1"), "nowhere", "nobody")), PlanCodeUnknownAgent},
		{"unknown capability", vpPlan(vpStep("step-1", "teleport", nil)), PlanCodeUnknownCapability},
		{"unknown return field", vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-1.response.data.volume}}", "step-1")),
			PlanCodeUnknownReturnField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ValidatePlan(tt.plan, nil, nil); err != nil {
				t.Fatalf("without catalog: %v, want valid", err)
			}
			pe, ok := AsPlanError(ValidatePlan(tt.plan, catalog, nil))
			if !ok || pe.Code != tt.code {
				t.Fatalf("with catalog: %v, want %s", pe, tt.code)
			}
		})
	}
	// The structural rules still apply without a catalog.
	pe, ok := AsPlanError(ValidatePlan(vpPlan(vpQuote("step-1"), vpTrade("step-2", "{{step-3.response}}", "step-1")), nil, nil))
	if !ok || pe.Code != PlanCodeUnknownReferenceTarget {
		t.Fatalf("unknown target without catalog = %v, want %s", pe, PlanCodeUnknownReferenceTarget)
	}
	// An empty catalog is not "no catalog".
	empty, err := NewCatalog(nil)
	if err != nil {
		t.Fatal(err)
	}
	if pe, ok := AsPlanError(ValidatePlan(vpPlan(vpQuote("step-1")), empty, nil)); !ok || pe.Code != PlanCodeUnknownAgent {
		t.Fatalf("empty catalog = %v, want %s", pe, PlanCodeUnknownAgent)
	}
}

func TestPlanError_ErrorIsAs(t *testing.T) {
	err := ValidatePlan(vpPlan(vpQuote("step-1"), vpTrade("step-2", "1", "step-9")), nil, nil)
	want := `plan rule 4 (unknown_dependency): step "step-2": depends on "step-9", which is not a step of this plan`
	if err == nil || err.Error() != want {
		t.Fatalf("Error() =\n %v\nwant\n %s", err, want)
	}
	wrapped := fmt.Errorf("after_planning hook %q: %w", "h", err)
	if !errors.Is(wrapped, ErrInvalidPlan) {
		t.Fatal("wrapped PlanError does not match ErrInvalidPlan")
	}
	if pe, ok := AsPlanError(wrapped); !ok || pe.Code != PlanCodeUnknownDependency {
		t.Fatalf("AsPlanError(wrapped) = %v, %v", pe, ok)
	}
	if _, ok := AsPlanError(errors.New("other")); ok {
		t.Fatal("AsPlanError matched a foreign error")
	}
	if errors.Is(errors.New("invalid plan"), ErrInvalidPlan) {
		t.Fatal("a look-alike error matched ErrInvalidPlan")
	}

	plain := (&PlanError{Rule: 1, Code: PlanCodeEmptyPlan, Message: "no steps"}).Error()
	if plain != "plan rule 1 (empty_plan): no steps" {
		t.Fatalf("plan-level Error() = %q", plain)
	}
	noID := ValidatePlan(vpPlan(vpQuote("step-1"), vpQuote("")), nil, nil)
	if want := `plan rule 4 (missing_step_id): step at index 1 (no step_id): step_id is empty`; noID == nil || noID.Error() != want {
		t.Fatalf("missing id Error() = %v, want %s", noID, want)
	}
}

// vpThreeSteps is a typical valid plan: quote, trade on the quote, headlines.
func vpThreeSteps() *RoutingPlan {
	news := vpAgent(vpStep("step-3", "headlines", map[string]any{"topic": "AAPL", "limit": 5.0}), "demo-tools", "news-service")
	return vpPlan(
		vpQuote("step-1"),
		vpStep("step-2", "execute_trade", map[string]any{
			"symbol": "AAPL", "quantity": 10.0,
			"limit_price": "{{step-1.response.data.price}}", "currency": "{{step-1.response.data.currency}}",
		}, "step-1"),
		news,
	)
}

func vpThirtySteps() (*RoutingPlan, []RoutingStep) {
	prior := []RoutingStep{vpQuote("step-101"), vpQuote("step-102")}
	steps := make([]RoutingStep, 0, 30)
	for i := range 30 {
		id := fmt.Sprintf("step-%d", i+1)
		switch {
		case i%3 == 0:
			steps = append(steps, vpQuote(id))
		case i%3 == 1:
			prev := fmt.Sprintf("step-%d", i)
			steps = append(steps, vpImplicit(vpStep(id, "execute_trade", map[string]any{
				"symbol": "AAPL",
				"price":  "{{" + prev + ".response.data.price}}",
				"legs":   []any{map[string]any{"ref": "{{step-101.response.data.currency}}", "qty": 1.0}},
			}, prev), "step-101"))
		default:
			steps = append(steps, vpTrade(id, "100", fmt.Sprintf("step-%d", i)))
		}
	}
	p := vpPhase(2, steps...)
	return p, prior
}

func TestValidatePlan_BenchmarkPlansAreValid(t *testing.T) {
	if err := ValidatePlan(vpThreeSteps(), vpCatalog(t), nil); err != nil {
		t.Fatal(err)
	}
	p, prior := vpThirtySteps()
	if err := ValidatePlan(p, vpCatalog(t), prior); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkValidatePlan_ThreeSteps(b *testing.B) {
	catalog := vpCatalog(b)
	plan := vpThreeSteps()
	b.ReportAllocs()
	for b.Loop() {
		if err := ValidatePlan(plan, catalog, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidatePlan_ThirtySteps(b *testing.B) {
	catalog := vpCatalog(b)
	plan, prior := vpThirtySteps()
	b.ReportAllocs()
	for b.Loop() {
		if err := ValidatePlan(plan, catalog, prior); err != nil {
			b.Fatal(err)
		}
	}
}

func TestValidatePlan_Rule0_PlansAreBounded(t *testing.T) {
	limits := PlanLimits{MaxSteps: 3, MaxDependencies: 2, MaxReferences: 2}
	withRefs := func(n int) *RoutingPlan {
		params := map[string]any{}
		for i := range n {
			params[fmt.Sprintf("p%d", i)] = "{{step-1.response.data.price}}"
		}
		return vpPlan(vpQuote("step-1"), vpStep("step-2", "execute_trade", params, "step-1"))
	}
	for _, tc := range []struct {
		name string
		plan *RoutingPlan
		code PlanCode
	}{
		{"at the step limit", vpPlan(vpMany("step-", 3)...), ""},
		{"over the step limit", vpPlan(vpMany("step-", 4)...), PlanCodeTooManySteps},
		{"at the dependency limit", vpPlan(vpQuote("step-1"), vpStep("step-2", "stock_quote", nil, "step-1", "step-1")), ""},
		{"over the dependency limit", vpPlan(vpQuote("step-1"), vpStep("step-2", "stock_quote", nil, "step-1", "step-1", "step-1")), PlanCodeTooManyDependencies},
		{"at the reference limit", withRefs(2), ""},
		{"over the reference limit", withRefs(3), PlanCodeTooManyReferences},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validatePlan(tc.plan, vpCatalog(t), nil, limits)
			pe, _ := AsPlanError(err)
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("validate = %v, want valid", err)
			case tc.code != "" && (pe == nil || pe.Rule != 0 || pe.Code != tc.code):
				t.Fatalf("validate = %v, want rule 0 %s", err, tc.code)
			}
		})
	}
}

// Step ids without the step- prefix are referenced like any other: a reference to one
// is checked by rules 5–7 (and an unknown {{x.y}} token stays plain text).
func TestValidatePlan_ReferencesToStepIDsWithoutThePrefix(t *testing.T) {
	quote := func(id string) RoutingStep { return vpQuote(id) }
	vpRun(t, 6, []vpCase{
		{name: "undeclared", plan: vpPlan(quote("lookup"), vpTrade("buy", "{{lookup.response.data.price}}")), code: PlanCodeUndeclaredDependency, step: "buy"},
		{name: "declared", plan: vpPlan(quote("lookup"), vpTrade("buy", "{{lookup.response.data.price}}", "lookup"))},
		{name: "self", plan: vpPlan(vpTrade("buy", "{{buy.response.data.price}}")), code: PlanCodeSelfReference, step: "buy"},
		{name: "unknown id is text", plan: vpPlan(vpTrade("buy", "{{user.name}}"))},
	})
	vpRun(t, 5, []vpCase{
		{name: "malformed", plan: vpPlan(quote("lookup"), vpTrade("buy", "{{lookup}}", "lookup")), code: PlanCodeMalformedReference, step: "buy"},
	})
	vpRun(t, 7, []vpCase{
		{name: "return field", plan: vpPlan(quote("lookup"), vpTrade("buy", "{{lookup.response.data.volume}}", "lookup")), code: PlanCodeUnknownReturnField, step: "buy"},
	})
}

// cyclicChain is n steps, each depending on the next, the last on the one before it:
// the only cycle is at the end, so a validator that looks for a cycle through each step
// in turn costs time quadratic in n.
func cyclicChain(n int) *RoutingPlan {
	steps := make([]RoutingStep, n)
	for i := range steps {
		next := fmt.Sprintf("step-%d", i+2)
		if i == n-1 {
			next = fmt.Sprintf("step-%d", n-1)
		}
		steps[i] = vpStep(fmt.Sprintf("step-%d", i+1), "stock_quote", nil, next)
	}
	return vpPlan(steps...)
}

func TestValidatePlan_Rule4_CycleFoundAtTheEndOfALongChain(t *testing.T) {
	err := validatePlan(cyclicChain(2000), vpCatalog(t), nil, PlanLimits{MaxSteps: 2000})
	pe, ok := AsPlanError(err)
	if !ok || pe.Code != PlanCodeDependencyCycle || pe.StepID != "step-1999" {
		t.Fatalf("validate = %v, want dependency_cycle on step-1999", err)
	}
}

// BenchmarkValidatePlan_WorstCase validates the largest plans a limit lets through and
// beyond: cyclic chains, whose cost must grow linearly with their length.
func BenchmarkValidatePlan_WorstCase(b *testing.B) {
	catalog := vpCatalog(b)
	for _, n := range []int{256, 2560, 10000} {
		plan := cyclicChain(n)
		b.Run(fmt.Sprintf("cyclic_chain=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := validatePlan(plan, catalog, nil, PlanLimits{MaxSteps: n, MaxDependencies: n}); err == nil {
					b.Fatal("a cyclic plan passed")
				}
			}
		})
	}
}
