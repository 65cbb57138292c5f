package compare_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/internal/stocktest"
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
	synthesized := func(length int, hmac string) compare.Verdict {
		return compare.Verdict{Outcome: engine.OutcomeCompleted, Response: compare.Digest{Length: length, HMAC: hmac}}
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
		{"another final response", synthesized(3, "aa"), synthesized(3, "bb"), compare.Changed},
		{"the same final response", synthesized(3, "aa"), synthesized(3, "aa"), compare.Same},
		{"a synthesis that no longer panics", compare.Verdict{Outcome: engine.OutcomePanic}, synthesized(3, "aa"), compare.NewlyAllowed},
	} {
		if got := compare.Compare(tc.live, tc.other); got != tc.want {
			t.Errorf("%s: Compare = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// inert runs the stock agent's cache and rate-limit steps against services that hold
// nothing, as the shadow and replay do.
var inert = config.Options{Services: compare.Services(nil)}

func trade(amount float64) engine.RoutingStep {
	return engine.RoutingStep{StepID: "step-1", AgentName: "broker", Namespace: "demo-tools", Instruction: "buy",
		Metadata: map[string]any{"capability": "execute_trade", "parameters": map[string]any{"amount": amount}}}
}

func TestPlanAndCheck_AgainstTwoGenerations(t *testing.T) {
	ctx := context.Background()
	live, strict := stocktest.Load(t, inert), stocktest.Load(t, inert, stocktest.Stricter...)
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
	gen := stocktest.Load(t, inert)
	in := compare.Input{Request: "hi", Metadata: map[string]any{"tenant": "acme"}, Enrichments: map[string]any{"seed": "x"}}
	if v := compare.BeforePlanning(context.Background(), &gen.Generation, in); v.Outcome != engine.OutcomeContinue {
		t.Fatalf("verdict %+v, want continue", v)
	}
	if len(in.Enrichments) != 1 {
		t.Fatalf("the input's enrichments were written: %v", in.Enrichments)
	}
}

// The stock agent redacts e-mail addresses, phone and card numbers from answers; a
// candidate that redacts phone numbers no more answers otherwise, and its verdict tells
// so by the responses' digests, which hold neither response.
func TestSynthesis_TellsRedactionsApartByDigest(t *testing.T) {
	ctx := context.Background()
	live := stocktest.Load(t, inert)
	lax := stocktest.Load(t, inert, stocktest.Edit{File: "hooks/30-response.yaml", Old: "patterns: [email, credit_card, phone]", New: "patterns: [email, credit_card]"})
	const phone, mail = "call +1 415 555 0100", "write to jane@example.com"
	synth := func(gen *config.Generation, draft string) compare.Verdict {
		return compare.Synthesis(ctx, &gen.Generation, compare.Input{RequestID: "r", Request: "who do I call?", Metadata: map[string]any{"tenant": "acme"}, Draft: draft})
	}
	lv, xv := synth(live, phone), synth(lax, phone)
	if lv.Outcome != engine.OutcomeCompleted || xv.Outcome != engine.OutcomeCompleted {
		t.Fatalf("live %+v, lax %+v: want both completed", lv, xv)
	}
	if xv.Response.Length != len(phone) || lv.Response.Length >= len(phone) {
		t.Fatalf("live %+v, lax %+v: want the live response redacted, the lax one the draft", lv.Response, xv.Response)
	}
	if got := compare.Compare(lv, xv); got != compare.Changed {
		t.Fatalf("Compare of the phone answer = %q, want changed", got)
	}
	if got := compare.Compare(synth(live, mail), synth(lax, mail)); got != compare.Same {
		t.Fatalf("Compare of the e-mail answer, redacted by both = %q, want the same", got)
	}
	if got := compare.Compare(synth(live, phone), lv); got != compare.Same {
		t.Fatalf("the same synthesis twice compares %q", got)
	}
	encoded, err := json.Marshal(xv)
	if err != nil {
		t.Fatal(err)
	}
	// "415 555" rather than "415": the hex digest may hold the digits.
	if strings.Contains(string(encoded), "415 555") || !strings.Contains(string(encoded), `"hmac":"`) {
		t.Fatalf("verdict encodes as %s: want a digest and no text of the response", encoded)
	}
}

// A live after_synthesis report is judged by its final response, so a shadow that
// answers it alike agrees.
func TestStaged_SynthesisAgreesWithItsRerun(t *testing.T) {
	gen := stocktest.Load(t, inert)
	r := &engine.StageReport{RequestID: "r", Stage: engine.StageAfterSynthesis, Outcome: engine.OutcomeCompleted,
		Request: "mail?", Draft: "jane@example.com", Response: "[REDACTED]"}
	if got := compare.Compare(compare.Staged(r), compare.Synthesis(context.Background(), &gen.Generation, compare.StageInput(r))); got != compare.Same {
		t.Fatalf("Compare = %q, want the same", got)
	}
}
