package config

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/policy"
)

type guardSite struct {
	d document
	n *yaml.Node
}

// compileGuards compiles the guard rules of every document, in order, into one
// operation runner. Every document that has guards must state the same policy revision.
func (l *loader) compileGuards() (*op.Runner, []GuardInfo, string) {
	var set op.Set
	var infos []GuardInfo
	var sites []guardSite
	var revisionFrom *guardSite
	failed := false
	for _, d := range l.docs {
		g := get(d.root, "guards")
		if g == nil || !d.usable("guards") {
			continue
		}
		rev := get(g, "policy_revision")
		switch {
		case revisionFrom == nil:
			set.PolicyRevision, revisionFrom = rev.Value, &guardSite{d, rev}
		case rev.Value != set.PolicyRevision:
			failed = true
			l.errs = append(l.errs, d.src.Errorf(diag.KindGuard, rev, "guards.policy_revision",
				"policy_revision %q differs from %q set in %s", rev.Value, set.PolicyRevision, revisionFrom.d.src.Name))
		}
		for i, n := range get(g, "rules").Content {
			guard, info := l.compileRule(d, n, "guards.rules["+strconv.Itoa(i)+"]", len(set.Guards))
			if guard == nil {
				failed = true
				continue
			}
			set.Guards = append(set.Guards, *guard)
			infos = append(infos, info)
			sites = append(sites, guardSite{d, n})
		}
	}
	var observers []ObserverInfo
	set.Arounds, observers = l.compileObservers()
	l.observers = observers
	if failed {
		// The problems are reported; compiling what is left would only add follow-on
		// errors (a revision without guards).
		return nil, infos, set.PolicyRevision
	}
	runner, err := op.Compile(set, op.WithLogger(l.opts.Logger))
	var ce *op.CompileError
	switch {
	case err == nil:
	case errors.As(err, &ce) && ce.Index >= 0 && ce.Index < len(sites):
		s := sites[ce.Index]
		l.errs = append(l.errs, s.d.src.Errorf(diag.KindGuard, s.n, "guards", "%s", ce.Message))
	case revisionFrom != nil:
		l.errs = append(l.errs, revisionFrom.d.src.Errorf(diag.KindGuard, revisionFrom.n, "guards.policy_revision", "%v", err))
	default:
		l.errs = append(l.errs, &diag.Error{Kind: diag.KindGuard, Message: err.Error()})
	}
	return runner, infos, set.PolicyRevision
}

func (l *loader) compileRule(d document, n *yaml.Node, field string, index int) (*op.Guard, GuardInfo) {
	operation := op.Operation(get(n, "operation").Value)
	name := "guard-" + strconv.Itoa(index+1)
	if nn := get(n, "name"); nn != nil {
		name = nn.Value
	}
	info := GuardInfo{Name: name, Operation: operation, File: d.src.Name, Line: n.Line}
	c := l.context(d, "", name)
	before := len(l.errs)
	fallback := l.ruleDenial(d, n, field)
	info.Code = scalar(get(n, "code"))
	var check op.GuardFunc
	readsStep := false
	if cond := get(n, "deny_if"); cond != nil {
		info.Kind = "cel"
		if prg := c.Expr(cond, field+".deny_if", expr.Guard, expr.Bool); prg != nil && fallback != nil {
			check, readsStep = celGuard(prg, *fallback), prg.MayRead("call", "step")
		}
	} else if r := get(n, "rego"); r != nil {
		info.Kind = "rego"
		if q := c.Query(get(r, "query"), field+".rego.query"); q != nil {
			check, readsStep = regoGuard(q, fallback), q.MayRead("step")
		}
	}
	if check == nil && len(l.errs) == before && !l.regoFailed {
		l.errs = append(l.errs, d.src.Errorf(diag.KindGuard, n, field, "a rule needs deny_if (with code and reason) or rego"))
	}
	if len(l.errs) > before || check == nil {
		return nil, info
	}
	mode := ruleMode(get(n, "mode"))
	if e := get(n, "effect"); e != nil && e.Value != "deny" {
		if e.Value != "require_approval" {
			l.errs = append(l.errs, d.src.Errorf(diag.KindGuard, e, field+".effect", "effect must be deny or require_approval, got %q", e.Value))
			return nil, info
		}
		switch {
		case operation != op.ToolCall:
			l.errs = append(l.errs, d.src.Errorf(diag.KindGuard, e, field+".effect", "effect require_approval holds tool calls only; this rule's operation is %s", operation))
			return nil, info
		case !mode.Enforcing():
			l.errs = append(l.errs, d.src.Errorf(diag.KindGuard, e, field+".effect", "effect require_approval needs mode enforce, not %s", mode))
			return nil, info
		}
		info.Effect, check = e.Value, holdForApproval(name, check)
	}
	if !mode.Enforcing() {
		info.Mode, check = mode, recordOnly(mode, name, check)
	}
	return &op.Guard{Name: name, Operations: []op.Operation{operation}, Check: check, ReadOnly: true, IgnoresStep: !readsStep}, info
}

// ruleMode reads a mode key (the schema checked its value); absent is enforce.
func ruleMode(n *yaml.Node) engine.RuleMode {
	if n == nil {
		return engine.RuleEnforce
	}
	return engine.RuleMode(n.Value)
}

// recordOnly runs a guard in warn or audit mode: what it would deny, or a failure of
// it, is reported as a finding and the call is allowed.
func recordOnly(mode engine.RuleMode, name string, check op.GuardFunc) op.GuardFunc {
	return func(ctx context.Context, call op.Call) error {
		err := check(ctx, call)
		if err == nil {
			return nil
		}
		f := engine.Finding{Mode: mode, Rule: "guard " + name, Cause: engine.CauseGuardError, Reason: err.Error()}
		if d, ok := op.AsDenial(err); ok {
			f.Code, f.Reason, f.Cause = d.Code, d.Reason, engine.CauseGuardDenied
		}
		return engine.ReportFinding(ctx, f)
	}
}

// holdForApproval runs a guard with effect require_approval: what it would deny is
// asked for an approval instead (engine.RequireApproval: the check looks the approval
// up after every guard allowed the call), and a failure of it blocks the call.
func holdForApproval(name string, check op.GuardFunc) op.GuardFunc {
	return func(ctx context.Context, call op.Call) error {
		err := check(ctx, call)
		d, ok := op.AsDenial(err)
		if !ok {
			return err
		}
		return engine.RequireApproval(ctx, engine.ApprovalAsk{Rule: name, Code: d.Code, Reason: d.Reason})
	}
}

// ruleDenial validates the code and reason of rule n and returns them as a denial, nil
// when the rule has neither or they are invalid (reported). A deny_if rule needs both; for
// a rego rule they are optional defaults, so only the ones given are checked and an
// absent reason stays empty.
func (l *loader) ruleDenial(d document, n *yaml.Node, field string) *op.Denial {
	code, reason := get(n, "code"), get(n, "reason")
	if code == nil && reason == nil {
		return nil
	}
	c, r := scalar(code), scalar(reason)
	if get(n, "deny_if") == nil {
		if code == nil {
			c = "denied"
		}
		if reason == nil {
			r = "denied"
		}
	}
	den, err := op.NewDenial(c, r)
	if err != nil {
		at, sub := n, ""
		var ide *op.InvalidDenialError
		if errors.As(err, &ide) {
			sub = ide.Field
			if v := get(n, ide.Field); v != nil {
				at = v
			}
		}
		l.errs = append(l.errs, d.src.Errorf(diag.KindGuard, at, joinField(field, sub), "%v", err))
		return nil
	}
	if reason == nil {
		den.Reason = ""
	}
	return den
}

func scalar(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	return n.Value
}

// celGuard denies with d when prg is true; an evaluation error is a guard error (fail
// closed).
func celGuard(prg *expr.Program, d op.Denial) op.GuardFunc {
	return func(ctx context.Context, call op.Call) error {
		vars := guardVars(&call)
		deny, err := prg.EvalBool(ctx, vars)
		if err != nil {
			return fmt.Errorf("deny_if: %w", err)
		}
		if deny {
			return &op.Denial{Code: d.Code, Reason: d.Reason}
		}
		return nil
	}
}

// regoGuard denies with the first deny entry of the decision document; an entry without
// a reason takes the rule's reason. Undefined, error, timeout or a wrong shape is a guard
// error (fail closed).
func regoGuard(q *policy.Query, fallback *op.Denial) op.GuardFunc {
	return func(ctx context.Context, call op.Call) error {
		input, err := policy.CallInput(&call, call.Request, call.Metadata, nil)
		if err != nil {
			return err
		}
		if call.Step != nil {
			step, err := ast.InterfaceToValue(call.Step)
			if err != nil {
				return fmt.Errorf("step input: %w", err)
			}
			input.(ast.Object).Insert(ast.StringTerm("step"), ast.NewTerm(step))
		}
		dec, err := q.GuardDecision(ctx, input)
		if err != nil {
			return err
		}
		if len(dec.Deny) == 0 {
			return nil
		}
		code, reason := dec.Deny[0].Code, dec.Deny[0].Reason
		if reason == "" && fallback != nil {
			reason = fallback.Reason
		}
		return op.Deny(code, reason)
	}
}

func guardVars(call *op.Call) *expr.Vars {
	return &expr.Vars{Request: call.Request, Metadata: call.Metadata, Call: call, Flow: call.Flow}
}
