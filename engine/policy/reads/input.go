package reads

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/policy/internal/regovalue"
)

// Input returns the Rego value an evaluation under t needs of the input input views:
// the parts t says may be observed, converted as regovalue converts them, and nothing
// else. Of an array whose elements are not read it keeps the length (elements null);
// of an object read in part it keeps the members read by name and, when its size is
// read, the other members' keys (values null). Its projection under t is input's, so
// it has input's Key and every evaluation the analysis covers decides on it as on the
// whole input; a value no evaluation reads is never converted. It fails where Key
// fails.
func (t *Tree) Input(input engine.View) (ast.Value, error) {
	term, err := inputView(input, t.root)
	if err != nil {
		return nil, err
	}
	return term.Value, nil
}

func inputView(v engine.View, n *readNode) (*ast.Term, error) {
	switch v.Kind() {
	case engine.ViewValue:
		return inputAny(v.Value(), n)
	case engine.ViewArray:
		if n.whole {
			break
		}
		terms := make([]*ast.Term, v.Len())
		for i := range terms {
			if n.elems == nil {
				terms[i] = ast.NullTerm()
				continue
			}
			t, err := inputView(v.Index(i), n.elems)
			if err != nil {
				return nil, err
			}
			terms[i] = t
		}
		return ast.ArrayTerm(terms...), nil
	case engine.ViewObject:
		if n.whole || n.elems != nil {
			break
		}
		var room [8][2]*ast.Term // ast.NewObject copies the items
		items := room[:0]
		if n.sized {
			for i := range v.NumField() {
				if name, _, ok := v.Field(i); ok && n.fields[name] == nil {
					items = append(items, ast.Item(regovalue.Key(name), ast.NullTerm()))
				}
			}
		}
		for k, i := range n.indexes(v) {
			m, ok := member(v, i)
			if !ok {
				continue
			}
			f := n.order[k]
			t, err := inputView(m, f.node)
			if err != nil {
				return nil, err
			}
			items = append(items, ast.Item(f.key, t))
		}
		return ast.ObjectTerm(items...), nil
	}
	return regovalue.Term(v)
}

// inputAny is inputView for a JSON-shaped Go value: maps and slices read in part are
// walked; anything else is converted whole, as Key converts it.
func inputAny(x any, n *readNode) (*ast.Term, error) {
	switch v := x.(type) {
	case map[string]any:
		if v != nil && !n.whole && n.elems == nil {
			var room [8][2]*ast.Term // ast.NewObject copies the items
			items := room[:0]
			if n.sized {
				for k := range v {
					if n.fields[k] == nil {
						items = append(items, ast.Item(ast.StringTerm(k), ast.NullTerm()))
					}
				}
			}
			for _, f := range n.order {
				e, ok := v[f.name]
				if !ok {
					continue
				}
				t, err := inputAny(e, f.node)
				if err != nil {
					return nil, err
				}
				items = append(items, ast.Item(f.key, t))
			}
			return ast.ObjectTerm(items...), nil
		}
	case []any:
		if v != nil && !n.whole {
			terms := make([]*ast.Term, len(v))
			for i, e := range v {
				if n.elems == nil {
					terms[i] = ast.NullTerm()
					continue
				}
				t, err := inputAny(e, n.elems)
				if err != nil {
					return nil, err
				}
				terms[i] = t
			}
			return ast.ArrayTerm(terms...), nil
		}
	}
	val, err := regovalue.Of(x)
	if err != nil {
		return nil, err
	}
	return ast.NewTerm(val), nil
}
