package expr

import (
	"slices"

	"github.com/google/cel-go/common/ast"

	"github.com/agentd-dev/agentd/engine/diag"
)

// freeIdents records in out, by expression id, the identifiers in e that no enclosing
// comprehension binds. The parser bounds the nesting depth, so the recursion is
// bounded too.
func freeIdents(e ast.Expr, bound []string, out map[int64]string) {
	switch e.Kind() {
	case ast.IdentKind:
		if name := e.AsIdent(); !slices.Contains(bound, name) {
			out[e.ID()] = name
		}
	case ast.SelectKind:
		freeIdents(e.AsSelect().Operand(), bound, out)
	case ast.CallKind:
		call := e.AsCall()
		if call.IsMemberFunction() {
			freeIdents(call.Target(), bound, out)
		}
		for _, arg := range call.Args() {
			freeIdents(arg, bound, out)
		}
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			freeIdents(el, bound, out)
		}
	case ast.MapKind:
		for _, entry := range e.AsMap().Entries() {
			freeIdents(entry.AsMapEntry().Key(), bound, out)
			freeIdents(entry.AsMapEntry().Value(), bound, out)
		}
	case ast.StructKind:
		for _, field := range e.AsStruct().Fields() {
			freeIdents(field.AsStructField().Value(), bound, out)
		}
	case ast.ComprehensionKind:
		comp := e.AsComprehension()
		freeIdents(comp.IterRange(), bound, out)
		freeIdents(comp.AccuInit(), bound, out)
		inner := append(bound[:len(bound):len(bound)], comp.AccuVar(), comp.IterVar())
		if comp.HasIterVar2() {
			inner = append(inner, comp.IterVar2())
		}
		freeIdents(comp.LoopCondition(), inner, out)
		freeIdents(comp.LoopStep(), inner, out)
		freeIdents(comp.Result(), inner, out)
	}
}

// scopeError reports the first variable (in source order) that the expression uses freely
// and that another scope declares but scope does not. Names no scope declares are left to
// the type checker.
func scopeError(src string, scope Scope, a *ast.AST, free map[int64]string) *diag.Error {
	var first *diag.Error
	for id, name := range free {
		if scope.declares(name) {
			continue
		}
		in := scopesDeclaring(name)
		if in == "" {
			continue
		}
		e := errorAt(src, diag.KindCELUndeclaredVariable, a.SourceInfo().GetStartLocation(id),
			"variable \""+name+"\" is not available in "+string(scope)+" (available in "+in+")")
		if first == nil || e.Line < first.Line || e.Line == first.Line && e.Column < first.Column {
			first = e
		}
	}
	return first
}

// reads is what an expression reads of one variable it uses freely: the members it
// selects by name, or, when it uses the variable any other way, the whole value.
type reads struct {
	whole   bool
	members map[string]bool
}

// readsOf returns what e reads of each variable free (freeIdents of e) lists: a member
// selected by name (`call.step`, `has(call.step)`) is read alone; any other use (an
// argument, an index, an iteration range, the value itself) reads the whole value.
func readsOf(e ast.Expr, free map[int64]string) map[string]*reads {
	out := make(map[string]*reads)
	of := func(name string) *reads {
		r := out[name]
		if r == nil {
			r = &reads{members: make(map[string]bool)}
			out[name] = r
		}
		return r
	}
	selected := make(map[int64]bool)
	// Pre-order: a select is visited before its operand.
	ast.PreOrderVisit(e, ast.NewExprVisitor(func(x ast.Expr) {
		switch x.Kind() {
		case ast.SelectKind:
			sel := x.AsSelect()
			if name, ok := free[sel.Operand().ID()]; ok {
				selected[sel.Operand().ID()] = true
				of(name).members[sel.FieldName()] = true
			}
		case ast.IdentKind:
			if name, ok := free[x.ID()]; ok && !selected[x.ID()] {
				of(name).whole = true
			}
		}
	}))
	return out
}
