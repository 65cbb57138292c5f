package compare_test

import (
	"context"
	"testing"

	"github.com/agentd-dev/agentd/cmd/agentd/internal/compare"
	"github.com/agentd-dev/agentd/cmd/agentd/internal/stocktest"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

func TestCompare(t *testing.T) {
	accepted := compare.Verdict{Outcome: engine.OutcomeAccepted}
	rejected := func(codes ...string) compare.Verdict {
		v := compare.Verdict{Outcome: engine.OutcomeRejected, Cause: engine.CausePolicyDenied}
		for _, c := range codes {
			v.Violations = append(v.Violations, engine.Violation{Code: c, StepID: "step-1", Message: "worded " + c})
		}
		return v
	}
	denied := func(code string) compare.Verdict {
		return compare.Verdict{Outcome: engine.OutcomeDenied, Denial: &op.Denial{Code: code, Reason: "because " + code}}
	}
	for _, tc := range []struct {
		name        string
		live, other compare.Verdict
		want        compare.Change
	}{
		{"both accept", accepted, accepted, compare.Same},
		{"newly rejected", accepted, rejected("x"), compare.NewlyDenied},
		{"newly accepted", rejected("x"), accepted, compare.NewlyAllowed},
		{"other violations", rejected("x"), rejected("x", "y"), compare.Changed},
		{"violations in another order and wording", rejected("x", "y"), rejected("y", "x"), compare.Same},
		{"newly denied check", compare.Verdict{Outcome: engine.OutcomeAllowed}, denied("trade_limit"), compare.NewlyDenied},
		{"another denial code", denied("trade_limit"), denied("invalid_amount"), compare.Changed},
		{"a denial reworded", denied("trade_limit"), compare.Verdict{Outcome: engine.OutcomeDenied, Denial: &op.Denial{Code: "trade_limit", Reason: "no"}}, compare.Same},
		{"a guard error blocks", compare.Verdict{Outcome: engine.OutcomeAllowed}, compare.Verdict{Outcome: engine.OutcomeGuardError}, compare.NewlyDenied},
		{"a short circuit is another outcome", compare.Verdict{Outcome: engine.OutcomeContinue}, compare.Verdict{Outcome: engine.OutcomeShortCircuit}, compare.Changed},
		{"invalid where rejected", rejected("x"), compare.Verdict{Outcome: engine.OutcomeInvalidPlan}, compare.Changed},
	} {
		if got := compare.Compare(tc.live, tc.other); got != tc.want {
			t.Errorf("%s: Compare = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// stockAgent loads a copy of examples/stock-agent with edits applied.
func stockAgent(t *testing.T, edits ...stocktest.Edit) *config.Generation {
	t.Helper()
	gen, err := config.Load(stocktest.Dir(t, edits...), config.Options{Services: compare.Services(nil)})
	if err != nil {
		t.Fatal(err)
	}
	return gen
}

func trade(amount float64) engine.RoutingStep {
	return engine.RoutingStep{StepID: "step-1", AgentName: "broker", Namespace: "demo-tools", Instruction: "buy",
		Metadata: map[string]any{"capability": "execute_trade", "parameters": map[string]any{"amount": amount}}}
}

func TestPlanAndCheck_AgainstTwoGenerations(t *testing.T) {
	ctx := context.Background()
	live, strict := stockAgent(t), stockAgent(t, stocktest.Stricter...)
	in := compare.Input{RequestID: "r", Request: "buy", Plan: &engine.RoutingPlan{PlanID: "p", PhaseNumber: 1, Steps: []engine.RoutingStep{trade(8000)}}}
	lv, sv := compare.Plan(ctx, &live.Generation, in), compare.Plan(ctx, &strict.Generation, in)
	if lv.Outcome != engine.OutcomeAccepted || sv.Outcome != engine.OutcomeRejected || len(sv.Violations) == 0 || sv.Cause != engine.CausePolicyDenied {
		t.Fatalf("live %+v, strict %+v: want accepted, then rejected with violations", lv, sv)
	}
	if compare.Compare(lv, sv) != compare.NewlyDenied {
		t.Fatalf("Compare = %q", compare.Compare(lv, sv))
	}
	bad := compare.Input{Plan: &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{{StepID: "step-1", AgentName: "nobody", Namespace: "demo-tools", Instruction: "x"}}}}
	if v := compare.Plan(ctx, &live.Generation, bad); v.Outcome != engine.OutcomeInvalidPlan || len(v.Violations) != 1 {
		t.Fatalf("invalid plan: %+v", v)
	}

	st := &engine.RequestState{ID: "r", Phase: 1, PriorSteps: []engine.RoutingStep{trade(8000)}}
	call := op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-1", Namespace: "demo-tools", AgentName: "broker",
		Capability: "execute_trade", Parameters: map[string]any{"amount": 8000.0}}
	lc, sc := compare.Check(ctx, &live.Generation, st, call), compare.Check(ctx, &strict.Generation, st, call)
	if lc.Outcome != engine.OutcomeAllowed || sc.Outcome != engine.OutcomeDenied || sc.Denial.Code != "trade_limit" || sc.Cause != engine.CauseGuardDenied {
		t.Fatalf("live %+v, strict %+v: want allowed, then denied trade_limit", lc, sc)
	}
	if v := compare.Check(ctx, &live.Generation, nil, call); v.Denial == nil || v.Denial.Code != engine.CodeNotInAcceptedPlan || v.Cause != engine.CauseBindingDenied {
		t.Fatalf("unknown request: %+v, want a binding denial", v)
	}
}

func TestBeforePlanning_CacheNeverAnswers(t *testing.T) {
	gen := stockAgent(t)
	in := compare.Input{Request: "hi", Metadata: map[string]any{"tenant": "acme"}, Enrichments: map[string]any{"seed": "x"}}
	if v := compare.BeforePlanning(context.Background(), &gen.Generation, in); v.Outcome != engine.OutcomeContinue {
		t.Fatalf("verdict %+v, want continue", v)
	}
	if len(in.Enrichments) != 1 {
		t.Fatalf("the input's enrichments were written: %v", in.Enrichments)
	}
}
