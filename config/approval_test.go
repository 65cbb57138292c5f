package config_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// A guard rule with effect require_approval, CEL or Rego, holds the call it would deny
// for an approval: the check answers approval_required and names a pending approval
// that expires after settings.approval_ttl; a rule without effect still denies, and an
// approved call passes once, its record naming who approved it. Outside a check (a
// what-if evaluation of the guards) the rule denies approval_required.
func TestLoad_GuardEffectRequireApproval(t *testing.T) {
	for name, rule := range map[string]string{
		"cel": `deny_if: "call.parameters.amount > 10000"
      code: trade_limit
      reason: trades above 10000 need approval`,
		"rego": `rego: {query: data.agentd.limit}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"hooks/g.yaml": hookSet("g", `
settings:
  approval_ttl: 90m
guards:
  policy_revision: r1
  rules:
    - name: no-penny-stocks
      operation: tool_call
      deny_if: "call.parameters.symbol == 'PENNY'"
      code: penny_stock
      reason: penny stocks are not traded
    - name: trade-limit
      operation: tool_call
      effect: require_approval
      `+rule+"\n"),
				"policies/agentd/limit.rego": "package agentd.limit\n\ndeny contains {\"code\": \"trade_limit\", \"reason\": \"trades above 10000 need approval\"} if input.call.parameters.amount > 10000\n",
			}
			writeFiles(t, dir, maps.Clone(files))
			gen := mustLoad(t, dir)
			if gen.ApprovalTTL != 90*time.Minute {
				t.Errorf("ApprovalTTL = %v, want 90m", gen.ApprovalTTL)
			}
			if gen.Guards[0].Effect != "" || gen.Guards[1].Effect != "require_approval" {
				t.Errorf("guard effects = %q, %q; want \"\", require_approval", gen.Guards[0].Effect, gen.Guards[1].Effect)
			}
			call := func(symbol string, amount float64) op.Call {
				return op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "s1", Namespace: "finance", AgentName: "broker",
					Capability: "execute_trade", Parameters: map[string]any{"symbol": symbol, "amount": amount}}
			}
			wantDenial(t, gen.Runner.Guard(context.Background(), call("ACME", 25000)), engine.DenialApprovalRequired)

			mem := store.NewMemory(store.MemoryOptions{})
			gen.Binding = engine.BindingOff
			d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &gen.Generation}, States: mem, Records: mem})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			before := time.Now()
			res, err := d.Check(ctx, call("ACME", 25000))
			if err != nil || res.Allowed || res.Denial.Code != engine.DenialApprovalRequired || res.Approval == nil {
				t.Fatalf("check above the limit = %+v, %v; want approval_required", res, err)
			}
			if a := res.Approval; a.Rule != "trade-limit" || a.Code != "trade_limit" || a.ExpiresAt.Before(before.Add(89*time.Minute)) {
				t.Errorf("approval = %+v; want rule trade-limit, code trade_limit, expiring in 90m", a)
			}
			if res, _ := d.Check(ctx, call("PENNY", 25000)); res.Allowed || res.Denial.Code != "penny_stock" || res.Approval != nil {
				t.Errorf("a call the deny rule denies = %+v; want penny_stock, no approval", res)
			}
			if _, err := d.Decide(ctx, res.Approval.ID, engine.DecisionApprove, "token:desk", "ok"); err != nil {
				t.Fatal(err)
			}
			if res, err := d.Check(ctx, call("ACME", 25000)); err != nil || !res.Allowed {
				t.Fatalf("the approved call = %+v, %v; want allowed", res, err)
			}
			if res, _ := d.Check(ctx, call("ACME", 25000)); res.Allowed || res.Denial.Code != engine.DenialApprovalRequired {
				t.Fatalf("the approved call again = %+v; want approval_required", res)
			}
		})
	}
}

// A plan policy's require_approval accepts the plan and holds the listed steps'
// calls for an approval; the other steps run as before. The check that uses the
// approval records who approved it, with the comment, in the execution record.
func TestLoad_PlanPolicyRequireApproval(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"hooks/p.yaml": hookSet("p", `
catalog:
  - namespace: finance
    agent: broker
    capabilities: [{name: execute_trade}, {name: quote}]
hooks:
  - name: review
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.agentd.plan}
`),
		"policies/agentd/plan.rego": `package agentd.plan

deny := set()

require_approval contains {"step_id": s.step_id, "code": "big_trade", "reason": "a trade above 10000"} if {
	some s in input.plan.steps
	s.metadata.parameters.amount > 10000
}
`,
	})
	gen := mustLoad(t, dir)
	mem := store.NewMemory(store.MemoryOptions{})
	d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &gen.Generation}, States: mem, Records: mem})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := d.Open(ctx, "r1", engine.Opening{Text: "trade"})
	if err != nil {
		t.Fatal(err)
	}
	step := func(id, capability string, amount float64) engine.RoutingStep {
		return engine.RoutingStep{StepID: id, Namespace: "finance", AgentName: "broker", Instruction: capability,
			Metadata: map[string]any{"capability": capability, "parameters": map[string]any{"amount": amount}}}
	}
	if _, err := s.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{
		step("step-1", "execute_trade", 25000), step("step-2", "quote", 1)}}, 0); err != nil {
		t.Fatalf("the plan was not accepted: %v", err)
	}
	call := func(id, capability string, amount float64) op.Call {
		return op.Call{Operation: op.ToolCall, RequestID: "r1", StepID: id, Namespace: "finance", AgentName: "broker",
			Capability: capability, Parameters: map[string]any{"amount": amount}}
	}
	held, err := d.Check(ctx, call("step-1", "execute_trade", 25000))
	if err != nil || held.Allowed || held.Denial.Code != engine.DenialApprovalRequired || held.Approval == nil || held.Approval.Code != "big_trade" || held.Approval.Rule != "rego data.agentd.plan" {
		t.Fatalf("the held step = %+v, %v; want approval_required (big_trade, by the plan review)", held, err)
	}
	if res, err := d.Check(ctx, call("step-2", "quote", 1)); err != nil || !res.Allowed {
		t.Fatalf("the other step = %+v, %v; want allowed", res, err)
	}
	if _, err := d.Decide(ctx, held.Approval.ID, engine.DecisionApprove, "desk", "client called"); err != nil {
		t.Fatal(err)
	}
	if res, err := d.Check(ctx, call("step-1", "execute_trade", 25000)); err != nil || !res.Allowed {
		t.Fatalf("the approved step = %+v, %v; want allowed", res, err)
	}
	rec, err := mem.Get(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	var marks []engine.ApprovalMark
	for _, o := range rec.Operations {
		if o.Approval != nil {
			marks = append(marks, *o.Approval)
		}
	}
	want := []engine.ApprovalMark{
		{ID: held.Approval.ID, Status: engine.ApprovalPending},
		{ID: held.Approval.ID, Status: engine.ApprovalApproved, DecidedBy: "desk", Comment: "client called"},
	}
	if len(marks) != 2 || marks[0] != want[0] || marks[1] != want[1] {
		t.Fatalf("the record's approval marks = %+v, want %+v", marks, want)
	}
}
