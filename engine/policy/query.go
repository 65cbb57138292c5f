package policy

import (
	"context"
	"errors"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/policy/reads"
)

// Query is a data reference prepared once against a Bundle. It is immutable and safe for
// concurrent use.
type Query struct {
	query string
	ref   ast.Ref
	// members are the only members of the package ref names that are evaluated; nil
	// when ref names a rule or data, whose value is evaluated whole.
	members       []string
	compiler      *ast.Compiler
	prepared      rego.PreparedEvalQuery
	cache         *dataCache
	timeout       time.Duration
	deterministic bool
}

// Prepare validates and prepares query, a ground data reference such as
// data.agentd.plan. It returns a *diag.Error of kind undefined_query when query is not
// such a reference or when no package, rule or data document lies at that path (naming
// the nearest package), and of kind rego_compile when OPA cannot prepare it.
func (b *Bundle) Prepare(query string) (*Query, error) {
	ref, err := ast.ParseRef(query)
	if err != nil {
		return nil, &diag.Error{Kind: diag.KindUndefinedQuery, Message: "query " + query + " must be a data reference such as data.agentd.plan: " + err.Error()}
	}
	path, ok := stringPath(ref)
	if !ok {
		return nil, &diag.Error{Kind: diag.KindUndefinedQuery, Message: "query " + query + " must be a data reference with string parts, such as data.agentd.plan"}
	}
	if !b.defined(ref, path) {
		return nil, &diag.Error{Kind: diag.KindUndefinedQuery, Message: "query " + ref.String() + " names no package, rule or data" + b.nearestHint(ref.String())}
	}
	body := ast.NewBody(ast.NewExpr(ast.NewTerm(ref)))
	var members []string
	if b.isPackage(ref) {
		members = decisionMembers
		body = decisionMembersBody(ref, members)
	}
	prepared, err := rego.New(
		rego.ParsedQuery(body),
		rego.Compiler(b.compiler),
		rego.Store(b.store),
		rego.Capabilities(capabilities()),
		rego.StrictBuiltinErrors(true),
	).PrepareForEval(context.Background())
	if err != nil {
		return nil, &diag.Error{Kind: diag.KindRegoCompile, Message: "query " + ref.String() + ": " + err.Error()}
	}
	return &Query{query: ref.String(), ref: ref, members: members, compiler: b.compiler, prepared: prepared, cache: b.cache, timeout: b.timeout, deterministic: b.deterministic}, nil
}

// isPackage reports whether ref names a package: a node of the rule tree with no rule
// at or above it.
func (b *Bundle) isPackage(ref ast.Ref) bool {
	node := b.compiler.RuleTree.Find(ref)
	if node == nil || len(node.Values) > 0 {
		return false
	}
	return len(b.compiler.GetRulesForVirtualDocument(ref)) == 0
}

// decisionMembersBody evaluates only the given members of package ref:
// {k: v | some k in members; v := ref[k]}. The package's other rules are not
// evaluated, as for a query naming its deny rule.
func decisionMembersBody(ref ast.Ref, names []string) ast.Body {
	members := make([]*ast.Term, len(names))
	for i, m := range names {
		members[i] = ast.StringTerm(m)
	}
	k, v, i := ast.VarTerm("k"), ast.VarTerm("v"), ast.VarTerm("i")
	return ast.NewBody(ast.NewExpr(ast.ObjectComprehensionTerm(k, v, ast.NewBody(
		ast.Equality.Expr(k, ast.RefTerm(ast.ArrayTerm(members...), i)),
		ast.Equality.Expr(v, ast.NewTerm(ref.Append(k))),
	))))
}

// String returns the query's data reference.
func (q *Query) String() string { return q.query }

// MayRead reports whether an evaluation of q may observe input's member name (see
// reads.Analyze), so that a caller can leave out a member it never reads.
func (q *Query) MayRead(name string) bool {
	return reads.Analyze(q.compiler, q.ref, q.members).MayRead(name)
}

// defined reports whether something can exist at ref: a package or rule node of the
// compiled rule tree, a rule above it (whose value ref descends into), or data at or
// above it.
func (b *Bundle) defined(ref ast.Ref, path []string) bool {
	if b.compiler.RuleTree.Find(ref) != nil {
		return true
	}
	for i := len(ref) - 1; i > 0; i-- {
		if node := b.compiler.RuleTree.Find(ref[:i]); node != nil && len(node.Values) > 0 {
			return true
		}
	}
	return dataAt(b.data, path) != nil
}

// nearestHint names the package sharing the longest prefix with query.
func (b *Bundle) nearestHint(query string) string {
	best, bestLen := "", -1
	for _, p := range b.packages {
		if n := commonPrefixLen(p, query); n > bestLen {
			best, bestLen = p, n
		}
	}
	if best == "" {
		return " (no packages are loaded)"
	}
	return " (nearest package: " + best + ")"
}

func commonPrefixLen(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// eval evaluates the query with input (nil for none) under the bundle's deadline. It
// returns the document as JSON-shaped Go values (sets become arrays, numbers
// json.Number) and defined == false when the document is undefined. Errors are
// *EvalError: ErrTimeout when the deadline passed, ErrCanceled when ctx ended first,
// ErrEval for any other evaluation error (built-in errors are fatal).
func (q *Query) eval(ctx context.Context, input ast.Value) (value any, defined bool, err error) {
	evalCtx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	rs, err := q.prepared.Eval(evalCtx, q.evalOptions(ctx, rego.EvalParsedInput(input))...)
	if err != nil {
		return nil, false, q.evalError(evalCtx, ctx, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, false, nil
	}
	return rs[0].Expressions[0].Value, true, nil
}

// evalError classifies an evaluation failure. A cancelled evaluation is a timeout when
// its own deadline (or an earlier deadline of ctx) passed, and a cancellation when ctx
// was cancelled.
func (q *Query) evalError(evalCtx, ctx context.Context, err error) error {
	switch cause := evalCtx.Err(); {
	case errors.Is(cause, context.DeadlineExceeded):
		return &EvalError{Query: q.query, Reason: ErrTimeout, Cause: cause}
	case cause != nil:
		return &EvalError{Query: q.query, Reason: ErrCanceled, Cause: context.Cause(ctx)}
	default:
		return &EvalError{Query: q.query, Reason: ErrEval, Cause: withoutData(err)}
	}
}
