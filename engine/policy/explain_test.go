package policy

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/cover"

	"github.com/agentd-dev/agentd/engine/internal/wiretest"
)

// TestExplain_ViolationNamesTheDenyRule: a rejected plan's explanation names, for each
// violation, the deny rule that produced it (file and line as written) and the values
// its variables held.
func TestExplain_ViolationNamesTheDenyRule(t *testing.T) {
	q := mustPrepare(t, libraryBundle(t, Options{}), "data.agentd.plan")
	x := NewExplainer()
	d, err := q.PlanDecision(x.Context(context.Background()), mustPlanInput(t, wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote"), wiretest.StockStep("step-2", "execute_trade"))))
	if err != nil || d.Allowed() {
		t.Fatalf("decision = %+v, %v; want a denial", d, err)
	}
	exps := x.Explanations()
	if len(exps) != 1 {
		t.Fatalf("%d explanations, want 1", len(exps))
	}
	e := exps[0]
	if e.Query != "data.agentd.plan" || len(e.Violations) != 1 {
		t.Fatalf("explanation = %+v", e)
	}
	v := e.Violations[0]
	if v.Violation != d.Deny[0] {
		t.Errorf("violation %+v, decision said %+v", v.Violation, d.Deny[0])
	}
	want := RuleAt{Rule: "data.agentd.plan.deny", File: "agentd/plan/plan.rego", Line: lineOf(t, "agentd/plan/plan.rego", `deny contains lib.violation("capability_not_allowed"`)}
	want.Location = want.File + ":" + strconv.Itoa(want.Line)
	if v.Source != want {
		t.Errorf("source = %+v, want %+v", v.Source, want)
	}
	if v.Bindings["capability"] != "execute_trade" || v.Bindings["ns"] != "demo-tools" {
		t.Errorf("bindings = %v", v.Bindings)
	}
	if step, ok := v.Bindings["step"].(map[string]any); !ok || step["step_id"] != "step-2" {
		t.Errorf("bindings[step] = %v", v.Bindings["step"])
	}
	if len(v.Reads) != 1 || v.Reads[0].Ref != "input.plan.steps" || !v.Reads[0].Defined {
		t.Errorf("reads = %+v, want input.plan.steps (read through the _steps helper)", v.Reads)
	}
}

// TestExplain_AllowedPlanListsConsultedRules: an allowed plan has no violations, and
// the rules evaluated are listed, none of the deny rules having produced anything.
func TestExplain_AllowedPlanListsConsultedRules(t *testing.T) {
	q := mustPrepare(t, libraryBundle(t, Options{}), "data.agentd.plan")
	x := NewExplainer()
	if d, err := q.PlanDecision(x.Context(context.Background()), mustPlanInput(t, wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote")))); err != nil || !d.Allowed() {
		t.Fatalf("decision = %+v, %v; want allowed", d, err)
	}
	e := x.Explanations()[0]
	if len(e.Violations) != 0 {
		t.Errorf("violations = %+v", e.Violations)
	}
	denies := 0
	for _, r := range e.Consulted {
		if r.Rule == "data.agentd.plan.deny" {
			denies++
			if r.Produced {
				t.Errorf("deny rule %s produced a value for an allowed plan", r.Location)
			}
		}
	}
	if denies < 4 {
		t.Errorf("consulted %d deny rules, want every one: %+v", denies, e.Consulted)
	}
	var trace bytes.Buffer
	e.PrettyTrace(&trace)
	if !strings.Contains(trace.String(), "agentd/plan/plan.rego:") {
		t.Errorf("trace has no locations:\n%s", trace.String())
	}
}

// TestExplain_MissesNameWhereAFailOpenRuleStopped: a deny rule that reads a field the
// step lacks is undefined for that step; Misses names the rule and the expression.
func TestExplain_MissesNameWhereAFailOpenRuleStopped(t *testing.T) {
	b := mustCompile(t, Options{}, "p.rego", `package p

deny contains msg if {
	some step in input.plan.steps
	cap := step.metadata.capability
	cap == "execute_trade"
	msg := "no trades"
}
`)
	q := mustPrepare(t, b, "data.p")
	bad := wiretest.StockStep("step-1", "x")
	delete(bad.Metadata, "capability")
	x := NewExplainer()
	if d, err := q.PlanDecision(x.Context(context.Background()), mustPlanInput(t, wiretest.StockPlan(bad))); err != nil || !d.Allowed() {
		t.Fatalf("decision = %+v, %v; want the fail-open allow", d, err)
	}
	stepValue := map[string]any{"step_id": "step-1", "agent_name": "stock-service", "namespace": "demo-tools", "instruction": "run x",
		"metadata": map[string]any{"parameters": map[string]any{"symbol": "AAPL", "amount": 10}}}
	misses := x.Explanations()[0].Misses(stepValue)
	if len(misses) != 1 || misses[0].Source.Location != "p.rego:3" || misses[0].StoppedAt != "p.rego:5" {
		t.Fatalf("misses = %+v", misses)
	}
}

// TestTracer_CoverageCountsEvaluations: OPA's cover tracer under WithQueryTracer sees
// the evaluation.
func TestTracer_CoverageCountsEvaluations(t *testing.T) {
	b := libraryBundle(t, Options{})
	q := mustPrepare(t, b, "data.agentd.plan")
	cov := cover.New()
	ctx := WithQueryTracer(context.Background(), cov)
	if !Traced(ctx) || Traced(context.Background()) {
		t.Fatal("Traced disagrees with WithQueryTracer")
	}
	if _, err := q.PlanDecision(ctx, mustPlanInput(t, wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote")))); err != nil {
		t.Fatal(err)
	}
	report := cov.Report(b.compiler.Modules)
	if fr := report.Files["agentd/plan/plan.rego"]; fr == nil || fr.CoveredLines == 0 {
		t.Fatalf("no coverage of plan.rego: %+v", report.Files)
	}
}

// lineOf returns the 1-based line of the library file whose text starts with prefix.
func lineOf(tb testing.TB, file, prefix string) int {
	tb.Helper()
	for _, m := range libraryModules(tb, false) {
		if m.File != file {
			continue
		}
		for i, line := range strings.Split(string(m.Source), "\n") {
			if strings.HasPrefix(line, prefix) {
				return i + 1
			}
		}
	}
	tb.Fatalf("%s: no line starts with %q", file, prefix)
	return 0
}

// TestTracer_ExplainerAndCoverageTogether: an Explainer under a coverage context
// records the evaluation, and the coverage tracer still sees it.
func TestTracer_ExplainerAndCoverageTogether(t *testing.T) {
	b := libraryBundle(t, Options{})
	q := mustPrepare(t, b, "data.agentd.plan")
	cov := cover.New()
	x := NewExplainer()
	ctx := x.Context(WithQueryTracer(context.Background(), cov))
	if _, err := q.PlanDecision(ctx, mustPlanInput(t, wiretest.StockPlan(wiretest.StockStep("step-1", "execute_trade")))); err != nil {
		t.Fatal(err)
	}
	if e := x.Explanations(); len(e) != 1 || len(e[0].Violations) != 1 {
		t.Errorf("explanations = %+v", e)
	}
	if fr := cov.Report(b.compiler.Modules).Files["agentd/plan/plan.rego"]; fr == nil || fr.CoveredLines == 0 {
		t.Error("the coverage tracer saw nothing")
	}
}
