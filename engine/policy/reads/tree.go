package reads

import (
	"maps"
	"slices"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine"
)

// Tree is the result of Analyze: the input paths an evaluation may observe. Its paths
// never change (it only remembers where a view kept each member); it is safe for
// concurrent use.
type Tree struct {
	root *readNode
}

// Paths lists every input path of the tree in a stable order: `input.plan.steps[*].namespace`
// for a member of every element, a trailing `.**` for a value read whole, `=` for one
// that may be compared with a constant (a scalar's value is observed), `#` for one whose
// members may be counted; a path without a mark is observed by its type (and an array
// by its length). `[*]` under an object (members read by a key that is not a constant)
// means the object is read whole.
func (t *Tree) Paths() []string { return t.root.paths("input") }

// MayRead reports whether an evaluation may observe input's member name: it reads the
// member, reads members by a key that is not a constant, or reads or counts the input
// whole (the member's presence then shows).
func (t *Tree) MayRead(name string) bool {
	r := t.root
	return r.whole || r.sized || r.elems != nil || r.fields[name] != nil
}

// KeyPaths lists, for people, the input paths keys are made of: a value read whole or
// compared by its path, a value of which only the type (an array's length) is read with
// " (type)", and one whose members may be counted with " (size)".
func (t *Tree) KeyPaths() []string {
	var out []string
	t.root.keyPaths("input", &out)
	return out
}

// readNode is one input path a query's evaluation may observe. Reaching a node means
// the evaluation may see the value's type and an array's length; value, that it may
// also see a scalar's value; sized, that it may also count a string's characters or an
// object's members (and see a scalar's value); whole, that it may see everything under
// it. fields are the members read by constant name; elems is what is read of every
// element of an array (an object read by a key that is not a constant counts as read
// whole).
type readNode struct {
	whole  bool
	value  bool
	sized  bool
	fields map[string]*readNode
	elems  *readNode
	order  []*readField // fields by name, set by freeze
	// at is where order's fields were found in the last view read: inputs of one type
	// keep their members at the same indexes.
	at atomic.Pointer[membersAt]
}

type readField struct {
	name string
	key  *ast.Term
	node *readNode
}

// membersAt holds the index (engine.View.MemberIndex, -1 for none) of each of a node's
// fields, in its order, in objects of one type.
type membersAt struct {
	typ   engine.ViewType
	index []int
}

// freeze orders the fields of n and its descendants for encoding; n is not changed
// afterwards.
func (n *readNode) freeze() *readNode {
	for _, k := range sortedKeys(n.fields) {
		n.order = append(n.order, &readField{name: k, key: ast.StringTerm(k), node: n.fields[k].freeze()})
	}
	if n.elems != nil {
		n.elems.freeze()
	}
	return n
}

func (n *readNode) field(name string) *readNode {
	if n.fields == nil {
		n.fields = map[string]*readNode{}
	}
	c, ok := n.fields[name]
	if !ok {
		c = &readNode{}
		n.fields[name] = c
	}
	return c
}

func (n *readNode) each() *readNode {
	if n.elems == nil {
		n.elems = &readNode{}
	}
	return n.elems
}

// paths lists the node's paths, as Tree.Paths describes them.
func (n *readNode) paths(prefix string) []string {
	if n.whole {
		return []string{prefix + ".**"}
	}
	self := prefix
	if n.value {
		self += "="
	}
	if n.sized {
		self += "#"
	}
	out := []string{self}
	for _, f := range n.order {
		out = append(out, f.node.paths(prefix+"."+f.name)...)
	}
	if n.elems != nil {
		out = append(out, n.elems.paths(prefix+"[*]")...)
	}
	return out
}

func (n *readNode) keyPaths(prefix string, out *[]string) {
	switch {
	case n.whole:
		*out = append(*out, prefix)
		return
	case n.sized:
		*out = append(*out, prefix+" (size)")
	case len(n.order) > 0 || n.elems != nil:
	case n.value:
		*out = append(*out, prefix)
	default:
		*out = append(*out, prefix+" (type)")
	}
	for _, f := range n.order {
		f.node.keyPaths(prefix+"."+f.name, out)
	}
	if n.elems != nil {
		n.elems.keyPaths(prefix+"[*]", out)
	}
}

// scalarValue reports whether the key holds a scalar's value at n, not only its type.
func (n *readNode) scalarValue() bool { return n.whole || n.value || n.sized }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
