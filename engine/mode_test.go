package engine_test

import (
	"context"

	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// modedPlanHook is a required hook with a rule mode.
type modedPlanHook struct {
	*requiredHook
	mode engine.RuleMode
}

func (h modedPlanHook) RuleMode() engine.RuleMode { return h.mode }

type modedOptional struct {
	*planHook
	mode engine.RuleMode
}

func (h modedOptional) RuleMode() engine.RuleMode { return h.mode }

// A hook in warn or audit mode is evaluated and recorded, but never changes the
// outcome: a required hook's rejection becomes a finding and the phase is accepted, an
// optional hook's rewrite is dropped.
func TestModes_AfterPlanningRecordsInsteadOfApplying(t *testing.T) {
	denied := denied{[]engine.Violation{{Code: "capability_not_allowed", StepID: "step-1", Message: "no"}}}
	for _, mode := range []engine.RuleMode{engine.RuleWarn, engine.RuleAudit} {
		t.Run(string(mode), func(t *testing.T) {
			rewrite := modedOptional{&planHook{name: "rewrite", fn: func(_ context.Context, _ *engine.PipelineContext, p *engine.RoutingPlan) (*engine.RoutingPlan, error) {
				p.Steps = p.Steps[:1]
				return p, nil
			}}, mode}
			review := modedPlanHook{&requiredHook{planHook{name: "review", fn: func(context.Context, *engine.PipelineContext, *engine.RoutingPlan) (*engine.RoutingPlan, error) {
				return nil, denied
			}}}, mode}
			p := mustNew(t, []engine.Hook{rewrite, review}, engine.WithCatalog(testCatalog(t)))
			trail := engine.NewTrail()
			got, err := p.AfterPlanning(context.Background(), newPctx(), threeStepPlan(), nil, trail)
			if err != nil || len(got.Steps) != 3 {
				t.Fatalf("AfterPlanning = %v, %v; want the three-step plan accepted unchanged", got, err)
			}
			invs := trail.Invocations()
			if invs[0].Mode != mode || len(invs[0].WouldDeny) != 0 || invs[0].Decision.Reason != engine.ReasonAccepted {
				t.Errorf("rewrite invocation = %+v", invs[0])
			}
			r := invs[1]
			if r.Mode != mode || r.Status != engine.InvocationFailed || r.Decision.Action != engine.ActionContinue || len(r.WouldDeny) != 1 {
				t.Fatalf("review invocation = %+v", r)
			}
			f := r.WouldDeny[0]
			if f.Mode != mode || f.Cause != engine.CausePolicyDenied || len(f.Violations) != 1 || f.Rule != "hook review" {
				t.Errorf("finding = %+v", f)
			}
		})
	}
}

type modedBefore struct {
	*decisionHook
	mode engine.RuleMode
}

func (h modedBefore) RuleMode() engine.RuleMode { return h.mode }

type modedSynthesis struct {
	*synthesisHook
	mode engine.RuleMode
}

func (h modedSynthesis) RuleMode() engine.RuleMode { return h.mode }

// A before_planning hook in audit mode cannot short-circuit or change the enrichments,
// and an after_synthesis hook in audit mode cannot rewrite the response.
func TestModes_BeforePlanningAndSynthesisChangeNothing(t *testing.T) {
	limiter := modedBefore{decide("limit", authoritative("rate limited")), engine.RuleAudit}
	limiter.fn = func(_ context.Context, pctx *engine.PipelineContext, _ engine.Gate) (*engine.ShortCircuitDecision, error) {
		pctx.Enrichments["leak"] = "x"
		return authoritative("rate limited"), nil
	}
	p := mustNew(t, []engine.Hook{limiter})
	pctx, trail := newPctx(), engine.NewTrail()
	out, err := p.BeforePlanning(context.Background(), pctx, engine.NewGate(nil, false), trail)
	if out != nil || err != nil || pctx.Enrichments["leak"] != nil {
		t.Fatalf("BeforePlanning = %+v, %v, enrichments %v", out, err, pctx.Enrichments)
	}
	if f := trail.Invocations()[0].WouldDeny; len(f) != 1 || f[0].Code != string(engine.ActionShortCircuit) {
		t.Fatalf("findings = %+v", f)
	}
	redact := modedSynthesis{&synthesisHook{name: "redact", fn: func(context.Context, *engine.PipelineContext, string) (string, error) {
		return "[REDACTED]", nil
	}}, engine.RuleAudit}
	if got := mustNew(t, []engine.Hook{redact}).AfterSynthesis(context.Background(), newPctx(), "mail me", nil); got != "mail me" {
		t.Fatalf("AfterSynthesis = %q", got)
	}
}

// ReportFinding refuses an enforcing mode: an enforcing rule denies.
func TestModes_ReportFindingNeedsANonEnforcingMode(t *testing.T) {
	if err := engine.ReportFinding(context.Background(), engine.Finding{Mode: engine.RuleEnforce, Rule: "x"}); err == nil {
		t.Fatal("a finding in enforce mode was taken")
	}
	if err := engine.ReportFinding(context.Background(), engine.Finding{Mode: engine.RuleAudit, Rule: "x"}); err != nil {
		t.Fatal(err)
	}
}
