package policy

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine/internal/wiretest"
	"github.com/agentd-dev/agentd/engine/op"
)

func TestLibraryPlanDecision(t *testing.T) {
	q := mustPrepare(t, libraryBundle(t, Options{}), "data.agentd.plan")

	d, err := q.PlanDecision(t.Context(), mustPlanInput(t, wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote"))))
	if err != nil || !d.Allowed() || d.Plan != nil {
		t.Fatalf("stock_quote: PlanDecision = %+v, %v; want allowed", d, err)
	}

	p := wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote"), wiretest.StockStep("step-2", "execute_trade", "step-1"))
	d, err = q.PlanDecision(t.Context(), mustPlanInput(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed() || len(d.Deny) != 1 {
		t.Fatalf("execute_trade: Deny = %+v, want one violation", d.Deny)
	}
	if v := d.Deny[0]; v.Code != "capability_not_allowed" || v.StepID != "step-2" || v.Message == "" {
		t.Errorf("violation = %+v, want capability_not_allowed on step-2", v)
	}
}

func TestLibraryPlanDecisionNoPlan(t *testing.T) {
	q := mustPrepare(t, libraryBundle(t, Options{}), "data.agentd.plan")
	in, err := PlanInput(nil, 1, "", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := q.PlanDecision(t.Context(), in)
	if err != nil || d.Allowed() || d.Deny[0].Code != "invalid_plan" {
		t.Fatalf("PlanDecision(nil plan) = %+v, %v; want invalid_plan", d, err)
	}
}

func TestLibraryGuardDecision(t *testing.T) {
	q := mustPrepare(t, libraryBundle(t, Options{}), "data.agentd.guard")
	call := func(amount any) ast.Value {
		in, err := CallInput(&op.Call{
			Operation: op.ToolCall, RequestID: "req-1", StepID: "step-2",
			Namespace: "demo-tools", AgentName: "stock-service", Capability: "execute_trade",
			Parameters: map[string]any{"symbol": "AAPL", "amount": amount},
		}, "buy", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	if d, err := q.GuardDecision(t.Context(), call(500)); err != nil || !d.Allowed() {
		t.Fatalf("amount 500: %+v, %v; want allowed", d, err)
	}
	d, err := q.GuardDecision(t.Context(), call(25000.5))
	want := []Denial{{Code: "trade_limit", Reason: "trades above 10000 need approval"}}
	if err != nil || !slices.Equal(d.Deny, want) {
		t.Fatalf("amount 25000.5: %+v, %v; want %v", d, err, want)
	}
}

func TestPlanDecisionUndefined(t *testing.T) {
	b := mustCompile(t, Options{}, "p.rego", "package p\n\ndecision := {\"deny\": set()} if input.ready\n")
	_, err := mustPrepare(t, b, "data.p.decision").PlanDecision(t.Context(), nil)
	if !errors.Is(err, ErrUndefined) {
		t.Fatalf("PlanDecision = %v, want ErrUndefined", err)
	}
}

func TestPlanDecisionEntries(t *testing.T) {
	b := mustCompile(t, Options{}, "p.rego", `package p

deny contains "plain refusal"
deny contains {"code": "b_code", "step_id": "step-2", "message": "m2"}
deny contains {"code": "a_code", "step_id": "step-2", "message": "m1"}
deny contains {"code": "too_many_steps", "message": "plan-level"}
deny contains {"code": "bare"}

plan := {
	"plan_id": "rewritten",
	"original_request": "r",
	"steps": [{"step_id": "step-1", "agent_name": "a", "namespace": "n", "instruction": "i"}],
	"created_at": "2025-03-01T12:30:00Z",
	"terminal": false,
}
`)
	d, err := mustPrepare(t, b, "data.p").PlanDecision(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Violation{
		{Code: "bare"},
		{Code: "denied", Message: "plain refusal"},
		{Code: "too_many_steps", Message: "plan-level"},
		{Code: "a_code", StepID: "step-2", Message: "m1"},
		{Code: "b_code", StepID: "step-2", Message: "m2"},
	}
	if !slices.Equal(d.Deny, want) {
		t.Errorf("Deny =\n %+v\nwant\n %+v", d.Deny, want)
	}
	if d.Plan == nil || d.Plan.PlanID != "rewritten" || len(d.Plan.Steps) != 1 || d.Plan.IsTerminal() ||
		!d.Plan.CreatedAt.Equal(time.Date(2025, 3, 1, 12, 30, 0, 0, time.UTC)) {
		t.Errorf("Plan = %+v, want the rewritten plan", d.Plan)
	}
}

// A package's require_approval rule is read with its deny (a query naming the package
// evaluates both), its entries sorted by step.
func TestPlanDecisionRequireApproval(t *testing.T) {
	b := mustCompile(t, Options{}, "p.rego", `package p

deny := set()

require_approval contains {"step_id": "step-2", "code": "big_trade", "reason": "above 10000"}
require_approval contains {"step_id": "step-1", "code": "new_venue"}
`)
	d, err := mustPrepare(t, b, "data.p").PlanDecision(t.Context(), nil)
	want := []ApprovalStep{{StepID: "step-1", Code: "new_venue"}, {StepID: "step-2", Code: "big_trade", Reason: "above 10000"}}
	if err != nil || !d.Allowed() || !slices.Equal(d.RequireApproval, want) {
		t.Fatalf("PlanDecision = %+v, %v; want allowed with require_approval %+v", d, err, want)
	}
}

func TestPlanDecisionShapes(t *testing.T) {
	tests := map[string]string{
		"document_not_object": "decision := [1]",
		"no_deny":             `decision := {"allow": true}`,
		"deny_string":         `decision := {"deny": "no"}`,
		"deny_object":         `decision := {"deny": {"code": "x"}}`,
		"entry_number":        `decision := {"deny": {1}}`,
		"entry_without_code":  `decision := {"deny": [{"message": "m"}]}`,
		"code_not_string":     `decision := {"deny": [{"code": 7}]}`,
		"step_id_not_string":  `decision := {"deny": [{"code": "c", "step_id": 1}]}`,
		"message_not_string":  `decision := {"deny": [{"code": "c", "message": null}]}`,
		"plan_not_object":     `decision := {"deny": set(), "plan": "p"}`,
		"plan_bad_steps":      `decision := {"deny": set(), "plan": {"steps": "s"}}`,
		"plan_bad_time":       `decision := {"deny": set(), "plan": {"created_at": "yesterday"}}`,
		"approval_not_set":    `decision := {"deny": set(), "require_approval": "step-1"}`,
		"approval_string":     `decision := {"deny": set(), "require_approval": ["step-1"]}`,
		"approval_no_step":    `decision := {"deny": set(), "require_approval": [{"code": "c"}]}`,
		"approval_no_code":    `decision := {"deny": set(), "require_approval": [{"step_id": "step-1"}]}`,
		"approval_empty_code": `decision := {"deny": set(), "require_approval": [{"step_id": "step-1", "code": ""}]}`,
		"approval_bad_reason": `decision := {"deny": set(), "require_approval": [{"step_id": "step-1", "code": "c", "reason": 1}]}`,
	}
	for name, rule := range tests {
		t.Run(name, func(t *testing.T) {
			b := mustCompile(t, Options{}, "p.rego", "package p\n\n"+rule+"\n")
			d, err := mustPrepare(t, b, "data.p.decision").PlanDecision(t.Context(), nil)
			if !errors.Is(err, ErrShape) {
				t.Fatalf("PlanDecision = %+v, %v; want ErrShape", d, err)
			}
		})
	}
}

func TestGuardDecisionShapes(t *testing.T) {
	tests := map[string]string{
		"reason_not_string": `decision := {"deny": [{"code": "c", "reason": 1}]}`,
		"entry_array":       `decision := {"deny": [["c"]]}`,
		"deny_null":         `decision := {"deny": null}`,
	}
	for name, rule := range tests {
		t.Run(name, func(t *testing.T) {
			b := mustCompile(t, Options{}, "p.rego", "package p\n\n"+rule+"\n")
			_, err := mustPrepare(t, b, "data.p.decision").GuardDecision(t.Context(), nil)
			if !errors.Is(err, ErrShape) {
				t.Fatalf("GuardDecision = %v, want ErrShape", err)
			}
		})
	}
	b := mustCompile(t, Options{}, "p.rego", "package p\n\ndecision := {\"deny\": {\"no\", {\"code\": \"a\"}}}\n")
	d, err := mustPrepare(t, b, "data.p.decision").GuardDecision(t.Context(), nil)
	want := []Denial{{Code: "a"}, {Code: "denied", Reason: "no"}}
	if err != nil || !slices.Equal(d.Deny, want) || d.Allowed() {
		t.Fatalf("GuardDecision = %+v, %v; want %v", d, err, want)
	}
}
