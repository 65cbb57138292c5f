package reads

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
)

// KeyOfValue is the test oracle for Tree.Key: the same key, computed by projecting a
// Rego input value.
func KeyOfValue(t *Tree, input ast.Value) string {
	return string(shortKey(canon(nil).project(input, t.root), 0))
}

// ReadingWhole is a tree that reads the whole input.
func ReadingWhole() *Tree { return &Tree{root: (&readNode{whole: true}).freeze()} }

// ReadingEveryPath is a tree that reads every member and element of v's shape, none
// whole: scalars by their values when values is set, else by their types.
func ReadingEveryPath(v ast.Value, values bool) *Tree {
	return &Tree{root: everyPath(v, &readNode{value: values}, values).freeze()}
}

func everyPath(v ast.Value, n *readNode, values bool) *readNode {
	switch x := v.(type) {
	case ast.Object:
		x.Foreach(func(k, e *ast.Term) {
			f := n.field(string(k.Value.(ast.String)))
			f.value = values
			everyPath(e.Value, f, values)
		})
	case *ast.Array:
		x.Foreach(func(e *ast.Term) {
			n.each().value = values
			everyPath(e.Value, n.each(), values)
		})
	}
	return n
}

// ReadsWhole reports whether t reads the whole input.
func (t *Tree) ReadsWhole() bool { return t.root.whole }

// ProjectJSON is the reference for what Tree.Key encodes: the parts of v, a value as
// encoding/json decodes it (numbers as json.Number), that t reads, as a JSON value.
// Keys of two inputs must be equal exactly when their projections encode to the same
// JSON.
func ProjectJSON(t *Tree, v any) any { return projectJSON(v, t.root) }

func projectJSON(v any, n *readNode) any {
	if n.whole {
		return map[string]any{"whole": v}
	}
	switch x := v.(type) {
	case []any:
		out := map[string]any{"array": len(x)}
		if n.elems != nil {
			elems := make([]any, len(x))
			for i, e := range x {
				elems[i] = projectJSON(e, n.elems)
			}
			out["elems"] = elems
		}
		return out
	case map[string]any:
		if n.elems != nil {
			return map[string]any{"whole": v}
		}
		members := map[string]any{}
		for _, f := range n.order {
			if e, ok := x[f.name]; ok {
				members[f.name] = map[string]any{"present": projectJSON(e, f.node)}
			} else {
				members[f.name] = "absent"
			}
		}
		out := map[string]any{"object": members}
		if n.sized {
			out["size"] = len(x)
		}
		return out
	}
	if !n.scalarValue() {
		return map[string]any{"type": fmt.Sprintf("%T", v)}
	}
	return map[string]any{"scalar": v}
}
