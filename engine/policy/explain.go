package policy

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/lineage"
)

// Explainer records OPA's trace of every evaluation made under its Context and explains
// each one from it: which rules were consulted and which deny rule produced each
// violation, with the values its variables held. It is safe for concurrent use.
type Explainer struct {
	mu    sync.Mutex
	evals []*tracedEval
}

type tracedEval struct {
	q   *Query
	buf *topdown.BufferTracer
}

// NewExplainer returns an empty Explainer.
func NewExplainer() *Explainer { return &Explainer{} }

// Context returns ctx with x recording every evaluation under it, beside the tracers
// ctx already has. Such evaluations are traced (see Traced): a decision memo must
// evaluate rather than answer.
func (x *Explainer) Context(ctx context.Context) context.Context {
	return withTracer(ctx, tracerFor(func(q *Query) topdown.QueryTracer {
		e := &tracedEval{q: q, buf: topdown.NewBufferTracer()}
		x.mu.Lock()
		x.evals = append(x.evals, e)
		x.mu.Unlock()
		return e.buf
	}))
}

// Explanations explains the evaluations recorded so far, in the order they started.
func (x *Explainer) Explanations() []*Explanation {
	x.mu.Lock()
	evals := slices.Clone(x.evals)
	x.mu.Unlock()
	out := make([]*Explanation, len(evals))
	for i, e := range evals {
		out[i] = explain(e.q, *e.buf)
	}
	return out
}

// Explanation is what OPA's trace of one evaluation shows.
type Explanation struct {
	// Query is the data reference evaluated.
	Query string `json:"query"`
	// Violations are the deny entries the evaluation produced, each with the rule that
	// produced it.
	Violations []ViolationSource `json:"violations"`
	// Consulted are the rules (functions included) the evaluation entered, in file and
	// line order.
	Consulted []RuleEval `json:"consulted"`
	events    []*topdown.Event
	denyRule  func(*ast.Rule) bool
}

// RuleAt names a rule by its data path and where it is written.
type RuleAt struct {
	Rule     string `json:"rule"`
	Location string `json:"location"`
	File     string `json:"file"`
	Line     int    `json:"line"`
}

// RuleEval is one rule an evaluation entered; Produced says whether its body succeeded
// at least once.
type RuleEval struct {
	RuleAt
	Produced bool `json:"produced"`
}

// ViolationSource is one violation and the deny rule that produced it. Bindings are
// the rule's variables (as written, generated ones left out) when it produced the
// violation, as JSON values; Reads are the input references in the rule's body with
// the value each had (variables bound as above; absent when undefined).
type ViolationSource struct {
	Violation Violation      `json:"violation"`
	Source    RuleAt         `json:"source"`
	Bindings  map[string]any `json:"bindings"`
	Reads     []InputRead    `json:"reads"`
}

// InputRead is one input reference a rule reads and its value; Defined is false when
// the input has nothing there.
type InputRead struct {
	Ref     string `json:"ref"`
	Defined bool   `json:"defined"`
	Value   any    `json:"value,omitempty"`
}

// explain builds the Explanation of one recorded trace of q.
func explain(q *Query, events []*topdown.Event) *Explanation {
	x := &Explanation{Query: q.query, events: events, denyRule: q.isDenyRule, Violations: []ViolationSource{}, Consulted: []RuleEval{}}
	consulted := map[*ast.Rule]int{}
	seen := map[string]bool{}
	for _, e := range events {
		rule, ok := e.Node.(*ast.Rule)
		if !ok {
			continue
		}
		switch e.Op {
		case topdown.EnterOp:
			if _, ok := consulted[rule]; !ok {
				consulted[rule] = len(x.Consulted)
				x.Consulted = append(x.Consulted, RuleEval{RuleAt: ruleAt(rule)})
			}
		case topdown.ExitOp:
			if i, ok := consulted[rule]; ok {
				x.Consulted[i].Produced = true
			}
			if !q.isDenyRule(rule) || rule.Head.Key == nil {
				continue
			}
			src, ok := violationSource(q.compiler, rule, e)
			if key := fmt.Sprint(src.Violation); ok && !seen[key] {
				seen[key] = true
				x.Violations = append(x.Violations, src)
			}
		}
	}
	slices.SortFunc(x.Consulted, func(a, b RuleEval) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Rule, b.Rule))
	})
	slices.SortFunc(x.Violations, func(a, b ViolationSource) int {
		v, w := a.Violation, b.Violation
		return cmp.Or(cmp.Compare(v.StepID, w.StepID), cmp.Compare(v.Code, w.Code), cmp.Compare(v.Message, w.Message))
	})
	return x
}

// isDenyRule reports whether rule contributes to the deny collection q's decision
// reads: data.<pkg>.deny for a query naming a package, else the rule q names.
func (q *Query) isDenyRule(rule *ast.Rule) bool {
	if rule.Module == nil {
		return false
	}
	path := rule.Ref().GroundPrefix() // the document the rule contributes to
	if q.members != nil {
		return path.Equal(q.ref.Append(ast.InternedTerm("deny")))
	}
	return path.Equal(q.ref)
}

func ruleAt(rule *ast.Rule) RuleAt {
	at := RuleAt{Rule: rule.Ref().GroundPrefix().String()}
	if loc := rule.Location; loc != nil {
		at.File, at.Line = loc.File, loc.Row
		at.Location = fmt.Sprintf("%s:%d", loc.File, loc.Row)
	}
	return at
}

// violationSource decodes the entry a deny rule's Exit event produced: its head key
// with the event's bindings plugged in.
func violationSource(c *ast.Compiler, rule *ast.Rule, e *topdown.Event) (ViolationSource, bool) {
	key := plug(rule.Head.Key.Value, e.Locals)
	if !ast.IsConstant(key) {
		return ViolationSource{}, false
	}
	raw, err := ast.JSON(key)
	if err != nil {
		return ViolationSource{}, false
	}
	v, err := decodeViolation(raw)
	if err != nil {
		return ViolationSource{}, false
	}
	src := ViolationSource{Violation: v, Source: ruleAt(rule), Bindings: map[string]any{}, Reads: []InputRead{}}
	e.Locals.Iter(func(k, val ast.Value) bool {
		name := string(e.LocalMetadata[k.(ast.Var)].Name)
		if name == "" || name == "_" || strings.HasPrefix(name, "__") || strings.HasPrefix(name, "$") {
			return false
		}
		if j, err := ast.JSON(val); err == nil {
			src.Bindings[name] = j
		}
		return false
	})
	src.Reads = inputReads(c, rule, e)
	return src, true
}

// inputReads lists the input references in the body of rule and of every rule and
// function it depends on, with the event's bindings plugged in (into rule's own), and
// their values in the evaluation's input.
func inputReads(c *ast.Compiler, rule *ast.Rule, e *topdown.Event) []InputRead {
	var input ast.Value
	if t := e.Input(); t != nil {
		input = t.Value
	}
	out := []InputRead{}
	seen := map[string]bool{}
	for _, r := range dependencies(c, rule) {
		ast.WalkRefs(r.Body, func(ref ast.Ref) bool {
			if !ref.HasPrefix(ast.InputRootRef) {
				return false
			}
			if r == rule {
				ref = plug(ref, e.Locals).(ast.Ref)
			}
			name := ref.String()
			if seen[name] {
				return false
			}
			seen[name] = true
			read := InputRead{Ref: name}
			if input != nil && ref.IsGround() {
				if v, err := input.Find(ref[1:]); err == nil {
					read.Defined = true
					read.Value, _ = ast.JSON(v)
				}
			}
			out = append(out, read)
			return false
		})
	}
	return out
}

// dependencies returns rule and every rule it depends on, directly or not, rule first
// and the others in breadth-first order.
func dependencies(c *ast.Compiler, rule *ast.Rule) []*ast.Rule {
	out := []*ast.Rule{rule}
	seen := map[*ast.Rule]bool{rule: true}
	for i := 0; i < len(out); i++ {
		var next []*ast.Rule
		for d := range c.Graph.Dependencies(out[i]) {
			if r, ok := d.(*ast.Rule); ok && !seen[r] {
				seen[r] = true
				next = append(next, r)
			}
		}
		slices.SortFunc(next, func(a, b *ast.Rule) int { return a.Location.Compare(b.Location) })
		out = append(out, next...)
	}
	return out
}

// plug replaces the variables of v bound in locals by their values.
func plug(v ast.Value, locals *ast.ValueMap) ast.Value {
	if locals == nil {
		return v
	}
	out, _ := ast.TransformVars(v, func(x ast.Var) (ast.Value, error) {
		if b := locals.Get(x); b != nil {
			return b, nil
		}
		return x, nil
	})
	return out.(ast.Value)
}

// Miss is a deny rule that evaluated with some variable bound to a given value and
// produced nothing for it: the expression at StoppedAt failed (or was undefined).
type Miss struct {
	Source    RuleAt `json:"source"`
	StoppedAt string `json:"stopped_at"`
	Expr      string `json:"expr"`
}

// Misses lists the deny rules that, with a variable bound to value (a JSON-shaped
// value such as one plan step), stopped at an expression: for each, the last failing
// expression of its own body.
func (x *Explanation) Misses(value any) []Miss {
	want, err := ast.InterfaceToValue(value)
	if err != nil {
		return nil
	}
	rules := map[uint64]*ast.Rule{}
	last := map[*ast.Rule]*topdown.Event{}
	var order []*ast.Rule
	for _, e := range x.events {
		if r, ok := e.Node.(*ast.Rule); ok && (e.Op == topdown.EnterOp || e.Op == topdown.RedoOp) {
			rules[e.QueryID] = r
			continue
		}
		rule := rules[e.QueryID]
		if e.Op != topdown.FailOp || rule == nil || !x.denyRule(rule) || !e.HasExpr() || !bindsTo(e.Locals, want) {
			continue
		}
		if _, ok := last[rule]; !ok {
			order = append(order, rule)
		}
		last[rule] = e
	}
	out := make([]Miss, 0, len(order))
	for _, r := range order {
		e := last[r]
		out = append(out, Miss{Source: ruleAt(r), StoppedAt: fmt.Sprintf("%s:%d", e.Location.File, e.Location.Row), Expr: string(e.Location.Text)})
	}
	return out
}

func bindsTo(locals *ast.ValueMap, want ast.Value) bool {
	found := false
	locals.Iter(func(_, v ast.Value) bool {
		found = v.Compare(want) == 0
		return found
	})
	return found
}

// PrettyTrace writes OPA's own rendering of the evaluation's trace (as `opa eval
// --explain full` prints it), with source locations.
func (x *Explanation) PrettyTrace(w io.Writer) {
	topdown.PrettyTraceWithLocation(w, lineage.Full(x.events))
}

// PrettyFails writes OPA's rendering of the failing expressions of the evaluation and
// the rules that led to each (`opa eval --explain fails`).
func (x *Explanation) PrettyFails(w io.Writer) {
	topdown.PrettyTraceWithLocation(w, lineage.Fails(x.events))
}
