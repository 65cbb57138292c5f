package builtin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/policy"
)

func init() {
	register(&Spec{
		Name: "rego",
		Summary: "Reviews the plan with a prepared Rego query. Input `{plan, phase, request, metadata, enrichments, labels, history}`; " +
			"the decision document has `deny` (violations `{code, step_id?, message}` or strings) and optionally `plan` " +
			"(a rewritten plan). Allowed iff defined and `deny` is empty; anything else is an error.",
		Stages: []engine.Stage{engine.StageAfterPlanning},
		Params: []Param{
			{Name: "query", Type: text(), Required: true, Doc: "a data reference such as `data.agentd.plan`"},
			{Name: "memo", Type: boolean(), Default: true, Doc: "memoize decisions of deterministic policies, keyed by the input paths they can observe"},
			{Name: "mode", Type: enum(string(engine.RuleEnforce), string(engine.RuleWarn), string(engine.RuleAudit)), Default: string(engine.RuleEnforce),
				Doc: "`enforce` rejects the plan on a denial; `warn` and `audit` record what the policy would deny (would_deny) and let the plan through unchanged, and `warn` returns it as a warning"},
		},
		Compile: func(p *Params) Action {
			n := p.values["query"]
			memo := p.Bool("memo")
			q := p.ctx.Query(n, p.field+".query")
			if q == nil {
				return nil
			}
			a := newRegoPlan(q, n.Value, p.Hook(), memo, p.Services().Logger)
			a.mode = engine.RuleMode(p.Enum("mode"))
			return a

		},
	})
}

// Query prepares the Rego query in scalar n against c.Rego and reports problems at n.
// It returns nil on failure, and also, without a report, when the policies failed to
// compile (their errors are reported already).
func (c *Context) Query(n *yaml.Node, field string) *policy.Query {
	if c.Rego == nil {
		if !c.RegoFailed {
			c.add(c.Source.Errorf(diag.KindUndefinedQuery, n, field, "query %q: no Rego policies are loaded (policies/**/*.rego)", n.Value))
		}
		return nil
	}
	q, err := c.Rego.Prepare(n.Value)
	if err != nil {
		c.add(c.Source.Errorf(diag.KindUndefinedQuery, n, field, "%s", policyMessage(err)))
		return nil
	}
	if c.Queries != nil {
		*c.Queries = append(*c.Queries, q.String())
	}
	c.Reads.add(c.Stage, q.MayRead)
	return q
}

func policyMessage(err error) string {
	var pe *diag.Error
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}

// PlanRejection is the error of a rego action whose decision denies the plan: the
// policy said no. It lists the violations in a stable order.
type PlanRejection struct {
	Query      string
	Violations []policy.Violation
}

func (e *PlanRejection) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		if v.StepID != "" {
			parts[i] = fmt.Sprintf("%s (step %s): %s", v.Code, v.StepID, v.Message)
		} else {
			parts[i] = fmt.Sprintf("%s: %s", v.Code, v.Message)
		}
	}
	return fmt.Sprintf("plan denied by %s: %s", e.Query, strings.Join(parts, "; "))
}

// PlanViolations returns the violations (engine.PolicyDenial).
func (e *PlanRejection) PlanViolations() []engine.Violation { return e.Violations }

// DecisionCause is engine.CausePolicyDenied: the policy decided, and said no.
func (e *PlanRejection) DecisionCause() engine.Cause { return engine.CausePolicyDenied }

// AsPlanRejection finds a *PlanRejection in err's chain.
func AsPlanRejection(err error) (*PlanRejection, bool) {
	var r *PlanRejection
	ok := errors.As(err, &r)
	return r, ok
}

// planMemoSize bounds the decisions one rego action keeps.
const planMemoSize = 4096

// memoAuditEvery: one memo hit in this many is evaluated as well, off the request's
// path (the audited hit is answered from the memo like any other). A decision that
// differs turns the memo off for the generation and is logged as an error, so a mistake
// in the read analysis would cost a bounded number of answers (those before the audit
// and while it runs), not a generation's life.
const memoAuditEvery = 1000

// regoPlan evaluates a plan-review query. When the bundle's policies are deterministic
// it memoizes decisions by a canonical encoding of the input parts they read; the memo
// belongs to the compiled action and so to one config generation.
type regoPlan struct {
	query *policy.Query
	name  string
	hook  string
	// memo is nil when decisions are not memoized: noMemo says why, or an audit
	// turned the memo off.
	memo       atomic.Pointer[policy.PlanMemo]
	noMemo     string
	auditEvery uint64
	hits       atomic.Uint64
	// auditing is set while an audit runs; audits counts them, for tests to wait on.
	auditing atomic.Bool
	audits   sync.WaitGroup
	logger   *slog.Logger
	// mode is enforce, or warn or audit: a denial or failure is then a finding.
	mode engine.RuleMode
}

// newRegoPlan returns the action for query q (named name) in hook, with a memo when
// memo is set and q's policies are deterministic.
func newRegoPlan(q *policy.Query, name, hook string, memo bool, logger *slog.Logger) *regoPlan {
	a := &regoPlan{query: q, name: name, hook: hook, auditEvery: memoAuditEvery, logger: logger}
	switch m := q.NewPlanMemo(planMemoSize); {
	case !memo:
		a.noMemo = "memo: false"
	case m == nil:
		a.noMemo = "a policy calls a non-deterministic built-in"
	default:
		a.memo.Store(m)
	}
	return a
}

// Describe says whether and on what the action memoizes its decisions, and its mode
// when it does not enforce.
func (a *regoPlan) Describe() string {
	mode := ""
	if !a.mode.Enforcing() {
		mode = " [mode " + string(a.mode) + ": records what it would deny, changes nothing]"
	}
	if m := a.memo.Load(); m != nil {
		on := "rego " + a.name + mode + ": decisions memoized on " + strings.Join(m.Reads().KeyPaths(), ", ")
		if allowed := m.AllowedReads(); allowed != nil {
			on += "; those allowing the plan on " + strings.Join(allowed.KeyPaths(), ", ")
		}
		return on
	}
	return "rego " + a.name + mode + ": decisions not memoized (" + a.noMemo + ")"
}

func (a *regoPlan) Run(ctx context.Context, s *State) error {
	d, err := a.decide(ctx, s)
	if err == nil && !d.Allowed() {
		err = &PlanRejection{Query: a.name, Violations: d.Deny}
	}
	if err != nil && !a.mode.Enforcing() {
		return engine.ReportFinding(ctx, engine.Finding{Mode: a.mode, Rule: "rego " + a.name, Reason: err.Error(),
			Cause: engine.CauseOf(err), Violations: engine.ViolationsOf(err)})
	}
	if err != nil {
		return err
	}
	if d.Plan != nil && !a.mode.Enforcing() {
		return nil // a rule that only records rewrites nothing
	}
	if d.Plan != nil {
		if s.Plan, err = engine.ClonePlan(d.Plan); err != nil {
			return err
		}
	}
	if len(d.RequireApproval) > 0 && a.mode.Enforcing() {
		if d.Plan == nil { // the steps' metadata is replaced below: never the caller's plan
			if s.Plan, err = engine.ClonePlan(s.Plan); err != nil {
				return err
			}
		}
		for _, r := range d.RequireApproval {
			if err := engine.RequireStepApproval(s.Plan, r.StepID, engine.ApprovalAsk{Rule: "rego " + a.name, Code: r.Code, Reason: r.Reason}); err != nil {
				return fmt.Errorf("rego %s: %w", a.name, err)
			}
		}
	}
	return nil
}

// decide returns the decision for s, from the memo when it has it (one hit in
// auditEvery is evaluated as well, off the request's path: see startAudit). Failures
// (timeouts, evaluation errors) are never memoized. A query with a memo is evaluated
// on the memo's input (the parts its evaluation may read); one without (memo: false, a
// non-deterministic policy, a memo the audit turned off) on the whole input. A traced
// evaluation (explain, coverage) never uses the memo's decisions and sees the whole
// input, as given, unless that does not convert where a memoized query would not read
// it: it then sees the memo's input, and decides as an untraced evaluation does.
func (a *regoPlan) decide(ctx context.Context, s *State) (policy.PlanDecision, error) {
	phase := max(s.Plan.PhaseNumber, 1)
	p, memo, flow := s.Pctx, a.memo.Load(), s.Info.Flow
	if memo == nil || policy.Traced(ctx) {
		input, err := policy.PlanInput(s.Plan, phase, p.Request, p.Metadata, p.Enrichments, flow)
		if err != nil && memo != nil {
			input, err = memo.PlanInput(s.Plan, phase, p.Request, p.Metadata, p.Enrichments, flow)
		}
		return a.evaluate(ctx, input, err)
	}
	d, key, hit, err := memo.Lookup(s.Plan, phase, p.Request, p.Metadata, p.Enrichments, flow)
	if err != nil {
		return policy.PlanDecision{}, fmt.Errorf("rego input: %w", err)
	}
	if hit {
		if a.hits.Add(1)%a.auditEvery == 0 {
			a.startAudit(ctx, s, phase, d)
		}
		return d, nil
	}
	input, err := memo.PlanInput(s.Plan, phase, p.Request, p.Metadata, p.Enrichments, flow)
	d, err = a.evaluate(ctx, input, err)
	if err == nil {
		memo.Put(key, d)
	}
	return d, err
}

// evaluate evaluates the query on input, or fails with err, the error building it.
func (a *regoPlan) evaluate(ctx context.Context, input ast.Value, err error) (policy.PlanDecision, error) {
	if err != nil {
		return policy.PlanDecision{}, fmt.Errorf("rego input: %w", err)
	}
	return a.query.PlanDecision(ctx, input)
}

// startAudit evaluates, off the request's path, the whole input of s (not the memo's:
// the audit checks the read analysis both rely on) that the memo answered with
// memoized. The input is converted before the call returns, so the request may go on
// and change its plan. One audit runs at a time per action: a hit sampled while one
// runs is not audited. A whole input that does not convert (in a part no evaluation
// reads, or the key would have failed) proves nothing. An audit outlives its request,
// though not the query's timeout: it may log after its generation was replaced, which
// the log line names.
func (a *regoPlan) startAudit(ctx context.Context, s *State, phase int, memoized policy.PlanDecision) {
	if !a.auditing.CompareAndSwap(false, true) {
		return
	}
	input, err := policy.PlanInput(s.Plan, phase, s.Pctx.Request, s.Pctx.Metadata, s.Pctx.Enrichments, s.Info.Flow)
	if err != nil {
		a.auditing.Store(false)
		return
	}
	ctx, info := context.WithoutCancel(ctx), s.Info
	a.audits.Go(func() {
		defer a.auditing.Store(false)
		a.audit(ctx, info, input, memoized)
	})
}

// audit evaluates input, which the memo answered with memoized. A different outcome
// turns the memo off (later calls evaluate) and is logged; an evaluation cut short (its
// deadline passed, or ctx ended) proves nothing.
func (a *regoPlan) audit(ctx context.Context, info engine.RequestInfo, input ast.Value, memoized policy.PlanDecision) {
	d, err := a.query.PlanDecision(ctx, input)
	if errors.Is(err, policy.ErrTimeout) || errors.Is(err, policy.ErrCanceled) ||
		err == nil && reflect.DeepEqual(d, memoized) {
		return
	}
	a.memo.Store(nil)
	a.logger.ErrorContext(ctx, "rego decision memo disagreed with evaluation; memo off for this generation",
		"request_id", info.ID, "generation", info.Generation, "hook", a.hook, "query", a.name,
		"memoized_allowed", memoized.Allowed(), "evaluated_allowed", err == nil && d.Allowed(), "error", err)
}
