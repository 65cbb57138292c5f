package reads

import (
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// abstract is what the analysis knows of a term's value: the input nodes it may be
// (an alias), the input nodes whose values it may be built from (a composite or a
// message holding them: within), and, for a constant scalar, the constant.
type abstract struct {
	nodes  []*readNode
	within []*readNode
	konst  ast.Value
	// single: a set of one element at most (a template string's part).
	single bool
}

// union is what a value that is either a or b may alias; it is no constant (the
// analysis does not follow constants through rule and function values).
func (a abstract) union(b abstract) abstract {
	return abstract{nodes: addNodes(slices.Clone(a.nodes), b.nodes), within: addNodes(slices.Clone(a.within), b.within)}
}

// built is what a value built from these parts may alias: it holds them, so it is none
// of their nodes itself, and every node they alias or hold is within it.
func built(parts ...abstract) abstract {
	var out abstract
	for _, p := range parts {
		out.within = addNodes(addNodes(out.within, p.nodes), p.within)
	}
	return out
}

func addNodes(to, from []*readNode) []*readNode {
	for _, n := range from {
		if !slices.Contains(to, n) {
			to = append(to, n)
		}
	}
	return to
}

// readAnalysis computes which parts of the input a query's evaluation may observe. It
// follows input values through variables, rule values, function arguments and return
// values (with constant arguments propagated, so `object.get(step, key, "")` called
// with key "namespace" reads one member), and into the composites and messages built
// from them (and a comprehension's element, when its body has one solution at most),
// and counts every use it does not model (a value compared with another, passed to a
// built-in other than a type test, count, object.get, sprintf, concat or a template
// string, iterated as an object, a composite used other than as a value) as reading
// the value whole. A value only reached (bound, passed on, tested for its type) is
// observed by its type: a scalar's value counts once it is compared with a constant
// (==, <, a unification or a function parameter that is a constant) or counted.
// Anything it cannot follow at all reads the whole input. Rego has no recursion, so
// the walk ends.
type readAnalysis struct {
	c        *ast.Compiler
	root     *readNode
	rules    map[*ast.Rule]abstract
	calls    map[string]abstract
	visiting map[string]bool
	// iterated: the body being analyzed may have several solutions (it iterates).
	iterated bool
	// empty are the rules assumed to produce nothing (AnalyzeAllowed): their heads are
	// only reached, as what decides whether they are defined.
	empty map[*ast.Rule]bool
}

func newAnalysis(c *ast.Compiler) *readAnalysis {
	return &readAnalysis{c: c, root: &readNode{}, rules: map[*ast.Rule]abstract{}, calls: map[string]abstract{}, visiting: map[string]bool{}}
}

// Analyze returns the input paths an evaluation of query, a data reference compiled by
// c, may observe when the caller reads its value whole (members nil) or only the given
// members of it (a package, of which only those rules are evaluated).
func Analyze(c *ast.Compiler, query ast.Ref, members []string) *Tree {
	return newAnalysis(c).run(query, members)
}

// AnalyzeAllowed is Analyze for the evaluations in which the package query's member
// deny, a set built by `deny contains ...` rules alone, comes out empty: the input parts
// such an evaluation may observe, which leave out what only deny's entries would be
// made of (a step's id that only names it in a violation). Deny's bodies are analyzed
// as Analyze does; its entries are only reached, as whether each is defined depends on
// their presence and types (OPA moves an entry's computed parts into the body anyway).
// For any two inputs with equal keys under this tree, deny is empty for both or for
// neither, and when it is, the evaluations agree, as far as Analyze's keys are sound.
// It returns nil when members lack deny or the query is not a package with such a deny.
func AnalyzeAllowed(c *ast.Compiler, query ast.Ref, members []string) *Tree {
	if !slices.Contains(members, "deny") {
		return nil
	}
	deny := query.Append(ast.StringTerm("deny"))
	node := c.RuleTree.Find(deny)
	if node == nil || len(node.Children) > 0 || len(node.Values) == 0 {
		return nil
	}
	a := newAnalysis(c)
	a.empty = map[*ast.Rule]bool{}
	for _, r := range node.Values {
		if r.Head.RuleKind() != ast.MultiValue || !r.Ref().Equal(deny) {
			return nil
		}
		a.empty[r] = true
	}
	return a.run(query, members)
}

func (a *readAnalysis) run(query ast.Ref, members []string) *Tree {
	if members == nil {
		a.whole(a.resolveData(query, nil))
	}
	for _, k := range members {
		a.whole(a.resolveData(query.Append(ast.StringTerm(k)), nil))
	}
	return &Tree{root: a.root.freeze()}
}

// giveUp records that the whole input may be read.
func (a *readAnalysis) giveUp() { a.root.whole = true }

func (a *readAnalysis) whole(v abstract) {
	for _, n := range v.nodes {
		n.whole = true
	}
	for _, n := range v.within {
		n.whole = true
	}
}

// compared records that v is compared with a constant scalar: a scalar's value counts,
// and so does whatever a composite holds.
func (a *readAnalysis) compared(v abstract) {
	for _, n := range v.nodes {
		n.value = true
	}
	a.whole(abstract{within: v.within})
}

// rule analyzes r (once) and returns what its value may alias: the union over its else
// chain. A value is read whole when OPA compares it with others: when several
// definitions or several solutions of one body could conflict, and for a rule that
// builds a set or object from partial definitions. Variables in the head's reference
// (p[x].q := ...) are object keys, compared and counted: read whole.
func (a *readAnalysis) rule(r *ast.Rule) abstract {
	if v, ok := a.rules[r]; ok {
		return v
	}
	a.rules[r] = abstract{}
	var v abstract
	for x := r; x != nil; x = x.Else {
		env := bindings{}
		var value abstract
		iterated := a.scoped(func() {
			a.body(env, x.Body)
			for _, t := range x.Head.Ref()[1:] {
				if !t.IsGround() {
					a.wholeTerm(env, t)
				}
			}
			switch {
			case x.Head.Key == nil:
			case a.empty[r]:
				a.term(env, x.Head.Key) // reached: whether the entry is defined
			default:
				a.wholeTerm(env, x.Head.Key)
			}
			if x.Head.Value != nil {
				value = a.term(env, x.Head.Value)
			}
		})
		if iterated || x.Head.RuleKind() == ast.MultiValue || x.Head.Key != nil {
			a.whole(value)
			continue
		}
		v = v.union(value)
	}
	if len(a.c.GetRulesExact(r.Ref().GroundPrefix())) > 1 {
		a.whole(v)
	}
	a.rules[r] = v
	return v
}

// scoped analyzes a nested body with its own iteration flag and reports whether it
// iterated, leaving the enclosing body's flag as it was.
func (a *readAnalysis) scoped(f func()) bool {
	outer := a.iterated
	a.iterated = false
	f()
	iterated := a.iterated
	a.iterated = outer
	return iterated
}

// bindings maps the variables bound so far in a body to what their values may alias.
type bindings map[ast.Var]abstract

func (e bindings) copy() bindings {
	out := make(bindings, len(e))
	for k, v := range e {
		out[k] = v
	}
	return out
}

func (a *readAnalysis) body(env bindings, body ast.Body) {
	for _, expr := range body {
		a.expr(env, expr)
	}
}

func (a *readAnalysis) expr(env bindings, expr *ast.Expr) {
	if len(expr.With) > 0 {
		// A with replaces the input, data or a function (even a built-in this analysis
		// models) for the expression: nothing here holds.
		a.giveUp()
	}
	switch t := expr.Terms.(type) {
	case *ast.Term:
		a.truthy(a.term(env, t))
	case []*ast.Term:
		if out, tested := a.call(env, t[0], t[1:]); tested {
			a.truthy(out)
		}
	case *ast.Every:
		inner := env.copy()
		dom := a.term(env, t.Domain)
		a.scoped(func() {
			a.bindElems(inner, dom, t.Key, t.Value)
			a.body(inner, t.Body)
		})
	case *ast.SomeDecl:
		for _, s := range t.Symbols {
			if call, ok := s.Value.(ast.Call); ok {
				a.call(env, call[0], call[1:])
			}
		}
	default:
		a.giveUp()
	}
}

// truthy: an expression's value is tested for being defined and not false.
func (a *readAnalysis) truthy(v abstract) {
	if v.konst == nil {
		a.whole(v)
	}
}

// bindElems binds key and value of an iteration over dom (key: an index or an object
// key, both covered by reading dom's elements).
func (a *readAnalysis) bindElems(env bindings, dom abstract, key, value *ast.Term) {
	a.whole(abstract{within: dom.within})
	elems := abstract{}
	for _, n := range dom.nodes {
		elems.nodes = append(elems.nodes, n.each())
	}
	if key != nil {
		a.unify(env, key, abstract{}, nil)
	}
	if value != nil {
		a.unify(env, value, elems, nil)
	}
}

// term returns what t's value may alias, recording the reads evaluating it makes.
func (a *readAnalysis) term(env bindings, t *ast.Term) abstract {
	switch v := t.Value.(type) {
	case ast.Var:
		return env[v]
	case ast.Ref:
		return a.ref(env, v)
	case ast.Call:
		out, _ := a.call(env, v[0], v[1:])
		return out
	case ast.Null, ast.Boolean, ast.Number, ast.String:
		return abstract{konst: v}
	case *ast.ArrayComprehension:
		array, _ := a.comprehension(env, v.Body, v.Term)
		return array
	case *ast.SetComprehension:
		set, single := a.comprehension(env, v.Body, v.Term)
		set.single = single
		return set
	case *ast.ObjectComprehension:
		inner := env.copy()
		a.scoped(func() {
			a.body(inner, v.Body)
			a.wholeTerm(inner, v.Key)
			a.wholeTerm(inner, v.Value)
		})
	case *ast.Array:
		var parts []abstract
		v.Foreach(func(x *ast.Term) { parts = append(parts, a.term(env, x)) })
		return built(parts...)
	case ast.Set:
		var parts []abstract
		v.Foreach(func(x *ast.Term) { parts = append(parts, a.term(env, x)) })
		return built(parts...)
	case ast.Object:
		// Keys that are not constants are compared with each other: read whole.
		var parts []abstract
		v.Foreach(func(k, x *ast.Term) {
			a.wholeTerm(env, k)
			parts = append(parts, a.term(env, x))
		})
		return built(parts...)
	default:
		a.giveUp()
	}
	return abstract{}
}

// templateParts reports whether t is what OPA compiles a template string ($"…") into:
// an array literal of constant text and, per {expression}, the set of its values,
// printed "<undefined>" when empty and an error when it has several elements. With no
// set of several elements possible, the string is a message built from the sets'
// elements; otherwise (a direct call with other sets) whether the call fails depends on
// values, and the parts are read whole.
func (a *readAnalysis) templateParts(env bindings, t *ast.Term) bool {
	arr, ok := t.Value.(*ast.Array)
	if !ok {
		return false
	}
	for i := range arr.Len() {
		switch e := arr.Elem(i); e.Value.(type) {
		case ast.String, ast.Number, ast.Boolean, ast.Null:
		default:
			if !a.term(env, e).single {
				return false
			}
		}
	}
	return true
}

// comprehension analyzes an array or set comprehension. Its elements are compared
// (a set's) and ordered by its body's solutions, so they are read whole, unless the
// body has one solution at most: then the value is empty or holds the one element, and
// is built from it; single reports that case.
func (a *readAnalysis) comprehension(env bindings, body ast.Body, term *ast.Term) (v abstract, single bool) {
	inner := env.copy()
	var elem abstract
	if a.scoped(func() {
		a.body(inner, body)
		elem = a.term(inner, term)
	}) {
		a.whole(elem)
		return abstract{}, false
	}
	return built(elem), true
}

// wholeTerm evaluates t and counts everything it may alias as read whole.
func (a *readAnalysis) wholeTerm(env bindings, t *ast.Term) { a.whole(a.term(env, t)) }

// ref follows a reference from input, data or a variable.
func (a *readAnalysis) ref(env bindings, ref ast.Ref) abstract {
	head := ref[0]
	switch {
	case head.Equal(ast.InputRootDocument):
		return a.walk(env, abstract{nodes: []*readNode{a.root}}, ref[1:])
	case head.Equal(ast.DefaultRootDocument):
		return a.resolveData(ref, env)
	}
	if v, ok := head.Value.(ast.Var); ok {
		return a.walk(env, env[v], ref[1:])
	}
	a.giveUp()
	return abstract{}
}

// walk descends from v along path: a constant string selects a member, anything else an
// element. An index that may itself alias the input is read whole.
func (a *readAnalysis) walk(env bindings, v abstract, path ast.Ref) abstract {
	for _, seg := range path {
		name, ok := a.constString(env, seg)
		if !ok {
			a.index(env, seg)
		}
		a.whole(abstract{within: v.within})
		next := abstract{}
		for _, n := range v.nodes {
			if ok {
				next.nodes = append(next.nodes, n.field(name))
			} else {
				next.nodes = append(next.nodes, n.each())
			}
		}
		v = next
	}
	return v
}

// index records the reads of a non-constant reference part: an input value used as a
// key is compared with every key, so it is read whole; unbound variables (a plain one,
// or inside a composite key) are bound to keys or indexes, which the walk's element
// read covers, and the body iterates.
func (a *readAnalysis) index(env bindings, seg *ast.Term) {
	ast.WalkVars(seg, func(v ast.Var) bool {
		if !a.bound(env, v) {
			a.iterated = true
		}
		return false
	})
	a.bindPattern(env, seg)
}

// constString reports t as a constant string, directly or through a bound variable.
func (a *readAnalysis) constString(env bindings, t *ast.Term) (string, bool) {
	v := t.Value
	if x, ok := v.(ast.Var); ok {
		v = env[x].konst
	}
	s, ok := v.(ast.String)
	return string(s), ok
}

// resolveData follows a data reference (env nil: the query itself). Base documents read
// no input, except through an index; a rule's value is followed into; a reference that
// ends above rules (a package) or indexes into them by a variable reads them whole.
func (a *readAnalysis) resolveData(ref ast.Ref, env bindings) abstract {
	node := a.c.RuleTree
	for i, seg := range ref {
		if i > 0 && !seg.IsGround() {
			a.indexRest(env, ref[i:])
			a.wholeSubtree(node)
			return abstract{}
		}
		if node = node.Child(seg.Value); node == nil {
			a.indexRest(env, ref[i+1:])
			return abstract{}
		}
		if len(node.Values) > 0 {
			var v abstract
			for _, r := range node.Values {
				v = v.union(a.rule(r))
				if !r.Head.Ref().IsGround() {
					// A rule whose head continues with a variable (p[x].q := v) is kept
					// at its ground prefix: the rest of ref selects inside the head, not
					// the value.
					a.indexRest(env, ref[i+1:])
					a.wholeSubtree(node)
					return abstract{}
				}
			}
			for _, child := range node.Children {
				a.wholeSubtree(child)
			}
			if env == nil {
				env = bindings{}
			}
			return a.walk(env, v, ref[i+1:])
		}
	}
	a.wholeSubtree(node)
	return abstract{}
}

// indexRest records the reads of the non-constant parts of a reference's rest (env nil:
// the query, which has none).
func (a *readAnalysis) indexRest(env bindings, rest ast.Ref) {
	for _, s := range rest {
		if env != nil && !s.IsGround() {
			a.index(env, s)
		}
	}
}

// wholeSubtree analyzes every rule under node and counts their values as read whole.
func (a *readAnalysis) wholeSubtree(node *ast.TreeNode) {
	node.DepthFirst(func(n *ast.TreeNode) bool {
		for _, r := range n.Values {
			a.whole(a.rule(r))
		}
		return false
	})
}

// shallowBuiltins observe only what reaching a node already covers: a value's type.
var shallowBuiltins = map[string]bool{
	ast.IsArray.Name: true, ast.IsObject.Name: true, ast.IsString.Name: true, ast.IsNumber.Name: true,
	ast.IsBoolean.Name: true, ast.IsNull.Name: true, ast.IsSet.Name: true, ast.TypeNameBuiltin.Name: true,
}

// messages build a string from a constant (a format, a separator) and an array literal
// of parts: defined when the parts are, failing only on a part's type (concat's
// non-string), which reaching the part keys; the text is built from the parts.
var messages = map[string]bool{ast.Sprintf.Name: true, ast.Concat.Name: true}

// comparisons observe only a type (and a scalar) when one side is a constant scalar.
var comparisons = map[string]bool{
	ast.Equal.Name: true, ast.NotEqual.Name: true, ast.LessThan.Name: true, ast.LessThanEq.Name: true,
	ast.GreaterThan.Name: true, ast.GreaterThanEq.Name: true,
}

// call analyzes op(args...) and returns what its result may alias; tested is true when
// the expression's truth is that result (no output variable captures it, and it is not a
// unification, whose truth is a comparison already recorded).
func (a *readAnalysis) call(env bindings, op *ast.Term, args []*ast.Term) (result abstract, tested bool) {
	ref, isRef := op.Value.(ast.Ref)
	if !isRef {
		a.giveUp()
		return abstract{}, true
	}
	name := ref.String()
	if name == ast.Equality.Name || name == ast.Assign.Name {
		if len(args) == 2 {
			a.unify(env, args[0], abstract{}, args[1])
			return abstract{}, false
		}
	}
	if b, ok := ast.BuiltinMap[name]; ok {
		return a.builtin(env, b, args), len(b.Decl.FuncArgs().Args) == len(args)
	}
	if rules := a.c.GetRulesExact(ref); len(rules) > 0 && len(rules[0].Head.Args) <= len(args) {
		return a.function(env, ref, rules, args), len(rules[0].Head.Args) == len(args)
	}
	a.giveUp()
	return abstract{}, true
}

func (a *readAnalysis) builtin(env bindings, b *ast.Builtin, args []*ast.Term) abstract {
	fa := b.Decl.FuncArgs()
	if fa.Variadic != nil {
		for _, t := range args {
			a.wholeTerm(env, t)
		}
		return abstract{}
	}
	arity := len(fa.Args)
	if arity > len(args) {
		a.giveUp()
		return abstract{}
	}
	in := make([]abstract, arity)
	for i := range arity {
		in[i] = a.term(env, args[i])
	}
	if b.Relation {
		a.iterated = true // a relation (walk) has a solution per output
	}
	var result abstract
	switch {
	case b.Name == ast.Count.Name && arity == 1:
		for _, n := range in[0].nodes {
			n.sized = true
		}
		a.whole(abstract{within: in[0].within})
	case shallowBuiltins[b.Name]:
	case comparisons[b.Name] && arity == 2 && (in[0].konst != nil || in[1].konst != nil):
		a.compared(in[0])
		a.compared(in[1])
	case messages[b.Name] && arity == 2 && isString(in[0].konst) && isArray(args[1]):
		result = built(in[1])
	case b.Name == ast.InternalTemplateString.Name && arity == 1 && a.templateParts(env, args[0]):
		result = built(in[0])
	case b.Name == ast.ObjectGet.Name && arity == 3:
		result = a.objectGet(env, in[0], args[1], in[2])
	default:
		for _, v := range in {
			a.whole(v)
		}
	}
	if arity < len(args) {
		a.unify(env, args[arity], result, nil)
	}
	return result
}

// objectGet models object.get(obj, key, default) with a constant key or path: it reads
// that member only and returns it or the default.
func (a *readAnalysis) objectGet(env bindings, obj abstract, key *ast.Term, def abstract) abstract {
	var path []string
	if s, ok := a.constString(env, key); ok {
		path = []string{s}
	} else if arr, ok := key.Value.(*ast.Array); ok {
		for i := range arr.Len() {
			s, ok := a.constString(env, arr.Elem(i))
			if !ok {
				path = nil
				break
			}
			path = append(path, s)
		}
	}
	if path == nil || len(obj.within) > 0 {
		a.whole(obj)
		a.wholeTerm(env, key)
		return def
	}
	out := obj
	for _, s := range path {
		next := abstract{}
		for _, n := range out.nodes {
			next.nodes = append(next.nodes, n.field(s))
		}
		out = next
	}
	return out.union(def)
}

// function analyzes a call of a user function with these arguments (once per distinct
// argument abstraction) and returns what its value may alias, read whole when several
// definitions or several solutions of a body could conflict.
func (a *readAnalysis) function(env bindings, ref ast.Ref, rules []*ast.Rule, args []*ast.Term) abstract {
	arity := len(rules[0].Head.Args)
	in := make([]abstract, arity)
	var sig strings.Builder
	sig.WriteString(ref.String())
	for i := range arity {
		in[i] = a.term(env, args[i])
		fmt.Fprintf(&sig, "|%v", in[i].konst)
		for _, n := range in[i].nodes {
			fmt.Fprintf(&sig, ",%p", n)
		}
		for _, n := range in[i].within {
			fmt.Fprintf(&sig, ",<%p", n)
		}
	}
	key := sig.String()
	result, done := a.calls[key]
	switch {
	case done:
	case a.visiting[key]:
		a.giveUp()
	default:
		a.visiting[key] = true
		for _, r := range rules {
			for x := r; x != nil; x = x.Else {
				fenv := bindings{}
				var value abstract
				iterated := a.scoped(func() {
					for i, p := range x.Head.Args {
						a.unify(fenv, p, in[i], nil)
					}
					a.body(fenv, x.Body)
					if x.Head.Value != nil {
						value = a.term(fenv, x.Head.Value)
					}
				})
				if iterated {
					a.whole(value) // several solutions are compared for conflicts
				}
				result = result.union(value)
			}
		}
		if len(rules) > 1 {
			a.whole(result)
		}
		delete(a.visiting, key)
		a.calls[key] = result
	}
	if arity < len(args) {
		a.unify(env, args[arity], result, nil)
	}
	return result
}

// unify records `t = other`, where other is either a term or, when nil, a value
// already analyzed (v). An unbound variable is bound; anything else compares, reading
// both sides whole unless one is a constant scalar.
func (a *readAnalysis) unify(env bindings, t *ast.Term, v abstract, other *ast.Term) {
	if other != nil {
		if x, ok := other.Value.(ast.Var); ok && !a.bound(env, x) {
			a.unify(env, other, a.term(env, t), nil)
			return
		}
		if x, ok := t.Value.(ast.Var); ok && !a.bound(env, x) {
			env[x] = a.term(env, other)
			return
		}
		v = a.term(env, other)
	}
	if x, ok := t.Value.(ast.Var); ok && !a.bound(env, x) {
		env[x] = v
		return
	}
	if composite(t) {
		a.whole(v)
		a.bindPattern(env, t)
		if other != nil && composite(other) {
			a.bindPattern(env, other)
		}
		return
	}
	if other != nil && composite(other) {
		a.whole(a.term(env, t))
		a.bindPattern(env, other)
		return
	}
	tv := a.term(env, t)
	if tv.konst == nil && v.konst == nil {
		a.whole(tv)
		a.whole(v)
		return
	}
	a.compared(tv)
	a.compared(v)
}

func (a *readAnalysis) bound(env bindings, x ast.Var) bool {
	if x.IsWildcard() {
		return false
	}
	_, ok := env[x]
	return ok
}

func isString(v ast.Value) bool {
	_, ok := v.(ast.String)
	return ok
}

func isArray(t *ast.Term) bool {
	_, ok := t.Value.(*ast.Array)
	return ok
}

func composite(t *ast.Term) bool {
	switch t.Value.(type) {
	case *ast.Array, ast.Object, ast.Set:
		return true
	}
	return false
}

// bindPattern reads whole whatever the references and bound variables of a pattern may
// alias and binds its unbound variables: their values lie inside a value read whole (the
// other side of a unification, or a key compared with every key).
func (a *readAnalysis) bindPattern(env bindings, t *ast.Term) {
	ast.WalkTerms(t, func(x *ast.Term) bool {
		switch v := x.Value.(type) {
		case ast.Var:
			if a.bound(env, v) {
				a.whole(env[v])
			} else if !v.IsWildcard() {
				env[v] = abstract{}
			}
		case ast.Ref, ast.Call:
			a.wholeTerm(env, x)
			return true
		}
		return false
	})
}
