package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// heldGeneration is admitGeneration's catalog and review with a guard that holds a
// trade of more than 100 for an approval.
func heldGeneration(t *testing.T) *engine.Generation {
	t.Helper()
	gen := admitGeneration(t)
	runner, err := op.Compile(op.Set{PolicyRevision: "rev", Guards: []op.Guard{{Name: "limit", Operations: []op.Operation{op.ToolCall},
		Check: func(ctx context.Context, c op.Call) error {
			if amount, _ := c.Parameters["amount"].(float64); amount > 100 {
				return engine.RequireApproval(ctx, engine.ApprovalAsk{Rule: "limit", Code: "trade_limit", Reason: "trades above 100 need approval"})
			}
			return nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	gen.Runner = runner
	return gen
}

// heldDriver is a driver of heldGeneration on states; a second one on the same store
// stands for a restarted daemon or another replica.
func heldDriver(t *testing.T, states *store.Memory) *engine.Driver {
	t.Helper()
	d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: heldGeneration(t)}, States: states, Records: states})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A round kept with HoldRound is found under its key by another driver on the same
// store, held steps only; before the approval its check is held again, once approved
// it passes once, and the round is then no longer held.
func TestHeldRound_FoundAgainUntilEveryHeldStepRan(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory(store.MemoryOptions{})
	first := heldDriver(t, mem)
	sess, err := first.Open(ctx, "req", engine.Opening{Text: "trade"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := sess.Admit(ctx, &engine.RoutingPlan{PlanID: "p1", Steps: []engine.RoutingStep{
		admitStep("step-1", "trade", "buy", map[string]any{"symbol": "ACME", "amount": 500.0}),
		admitStep("step-2", "trade", "buy", map[string]any{"symbol": "ACME", "amount": 700.0}),
	}}, 1)
	if err != nil || len(a.Denied) != 2 || a.Denied[0].Approval == nil {
		t.Fatalf("Admit = %+v, %v; want both steps held", a, err)
	}
	if err := sess.HoldRound(ctx, "conv-1", []string{"step-1", "step-2"}); err != nil {
		t.Fatal(err)
	}
	other := heldDriver(t, mem)
	held := func() []string {
		t.Helper()
		s, steps, err := other.HeldRound(ctx, engine.StageAfterPlanning, "conv-1")
		if err != nil {
			t.Fatal(err)
		}
		if s == nil {
			return nil
		}
		if s.ID() != "req" {
			t.Fatalf("held round of request %q, want req", s.ID())
		}
		var ids []string
		for _, st := range steps {
			ids = append(ids, st.StepID)
		}
		return ids
	}
	if got := held(); strings.Join(got, ",") != "step-1,step-2" {
		t.Fatalf("held steps %v, want step-1,step-2", got)
	}
	check := func(step engine.RoutingStep) *engine.CheckResult {
		t.Helper()
		res, err := other.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: "req", StepID: step.StepID, Namespace: step.Namespace,
			AgentName: step.AgentName, Capability: step.Capability(), Parameters: step.Parameters()})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := check(a.Denied[0].Step); res.Allowed || res.Denial.Code != engine.DenialApprovalRequired {
		t.Fatalf("before the decision: %+v", res)
	}
	if _, err := other.Decide(ctx, a.Denied[0].Approval.ID, engine.DecisionApprove, "approver", ""); err != nil {
		t.Fatal(err)
	}
	if res := check(a.Denied[0].Step); !res.Allowed {
		t.Fatalf("after the approval: %+v", res)
	}
	if got := held(); strings.Join(got, ",") != "step-2" {
		t.Fatalf("held steps after step-1 ran: %v, want step-2", got)
	}
	if _, err := other.Decide(ctx, a.Denied[1].Approval.ID, engine.DecisionApprove, "approver", ""); err != nil {
		t.Fatal(err)
	}
	if res := check(a.Denied[1].Step); !res.Allowed {
		t.Fatalf("step-2 after the approval: %+v", res)
	}
	if got := held(); got != nil {
		t.Fatalf("held steps after every one ran: %v, want no held round", got)
	}
}

// HoldRound refuses what it cannot keep, and HeldRound finds nothing it did not keep
// and refuses another tenant.
func TestHeldRound_Errors(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory(store.MemoryOptions{})
	d := heldDriver(t, mem)
	open := func(id string, md map[string]any) *engine.Session {
		t.Helper()
		sess, err := d.Open(ctx, id, engine.Opening{Text: "trade", Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sess.Admit(ctx, &engine.RoutingPlan{PlanID: "p-" + id, Steps: []engine.RoutingStep{
			admitStep("step-1", "trade", "buy", map[string]any{"amount": 500.0})}}, 1); err != nil {
			t.Fatal(err)
		}
		return sess
	}
	sess := open("req", map[string]any{engine.TenantKey: "acme"})
	open("held-taken", nil) // a request whose id is the hold entry's of key "taken"
	for _, tc := range []struct {
		name, key string
		held      []string
		want      string
	}{
		{"no key", "", []string{"step-1"}, "key is 1 to"},
		{"a key too long", strings.Repeat("k", engine.MaxHoldKeyLen+1), []string{"step-1"}, "key is 1 to"},
		{"no such step", "k", []string{"step-9"}, "no accepted step"},
		{"the entry's id is a request's", "taken", []string{"step-1"}, "a request's own id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := sess.HoldRound(ctx, tc.key, tc.held); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("HoldRound = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	for _, key := range []string{"", "unknown", "taken"} {
		if s, steps, err := d.HeldRound(ctx, engine.StageAfterPlanning, key); s != nil || steps != nil || err != nil {
			t.Errorf("HeldRound(%q) = %v, %v, %v; want none", key, s, steps, err)
		}
	}
	if err := sess.HoldRound(ctx, "acme-conv", []string{"step-1"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := d.HeldRound(engine.WithTenant(ctx, "globex"), engine.StageAfterPlanning, "acme-conv")
	if r, ok := engine.AsRefusal(err); !ok || r.Code != engine.RefusedTenantForbidden {
		t.Fatalf("another tenant's held round: %v, want %s", err, engine.RefusedTenantForbidden)
	}
	if s, _, err := d.HeldRound(engine.WithTenant(ctx, "acme"), engine.StageAfterPlanning, "acme-conv"); err != nil || s == nil {
		t.Fatalf("the tenant's own held round: %v, %v", s, err)
	}
}
