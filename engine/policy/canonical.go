package policy

import (
	"encoding/binary"
	"slices"
	"strconv"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// canon writes an unambiguous encoding of the parts of a Rego input value that a
// readNode says may be observed: every value is a type tag followed by its content,
// strings and containers carry their lengths, object members go in key order. Two inputs
// with equal encodings look the same to every evaluation the analysis covers, so a strong
// hash of the encoding can key decisions. Numbers are written as their text: inputs that
// differ only in how a number is spelled get different keys, which costs a memo hit, never
// a wrong decision.
type canon struct{ buf []byte }

var canonPool = sync.Pool{New: func() any { return &canon{buf: make([]byte, 0, 1024)} }}

const (
	tagNull byte = iota + 1
	tagFalse
	tagTrue
	tagString
	tagNumber
	tagArray
	tagObject
	tagSet
	tagAbsent
	tagPresent
	tagOther
)

func (c *canon) tag(t byte) { c.buf = append(c.buf, t) }

func (c *canon) length(n int) { c.buf = binary.AppendUvarint(c.buf, uint64(n)) }

func (c *canon) text(t byte, s string) {
	c.tag(t)
	c.length(len(s))
	c.buf = append(c.buf, s...)
}

// project writes what n says may be observed of v: all of it when n is read whole;
// otherwise scalars in full, an array's length and what is read of its elements, an
// object's size when n is sized and, for each member read by name, its absence or its
// projection.
func (c *canon) project(v ast.Value, n *readNode) {
	if n.whole {
		c.value(v)
		return
	}
	switch x := v.(type) {
	case *ast.Array:
		c.tag(tagArray)
		c.length(x.Len())
		if n.elems != nil {
			for i := range x.Len() {
				c.project(x.Elem(i).Value, n.elems)
			}
		}
	case ast.Object:
		if n.elems != nil {
			c.value(v)
			return
		}
		_ = projectObject(c, n, x.Len(),
			func(f readField) (*ast.Term, bool) { t := x.Get(f.key); return t, t != nil },
			func(t *ast.Term, m *readNode) error { c.project(t.Value, m); return nil })
	default:
		c.value(v)
	}
}

// projectTyped writes what project would write for t's Rego value, converting only
// what n reads whole.
func (c *canon) projectTyped(t typed, n *readNode) error {
	switch t.kind {
	case kindNull:
		c.tag(tagNull)
	case kindString:
		c.text(tagString, t.s)
	case kindInt:
		var digits [20]byte
		d := strconv.AppendInt(digits[:0], int64(t.n), 10)
		c.tag(tagNumber)
		c.length(len(d))
		c.buf = append(c.buf, d...)
	case kindTime:
		s, err := timeString(t.time)
		if err != nil {
			return err
		}
		c.text(tagString, s)
	case kindBool:
		c.value(ast.Boolean(t.b))
	case kindStrings:
		c.tag(tagArray)
		c.length(len(t.ss))
		if n.whole || n.elems != nil {
			for _, s := range t.ss {
				c.text(tagString, s)
			}
		}
	case kindAny:
		return c.projectAny(t.any, n)
	default:
		if n.whole {
			v, err := t.term()
			if err != nil {
				return err
			}
			c.value(v.Value)
			return nil
		}
		return c.projectComposite(t, n)
	}
	return nil
}

// projectComposite projects a plan, its steps or its needs_user_input, read in part.
func (c *canon) projectComposite(t typed, n *readNode) error {
	switch t.kind {
	case kindPlan:
		if t.plan == nil {
			c.tag(tagNull)
			return nil
		}
		var ms [9]member
		return c.projectMembers(planMembers(t.plan, &ms), n)
	case kindSteps:
		c.tag(tagArray)
		c.length(len(t.steps))
		if n.elems == nil {
			return nil
		}
		for i := range t.steps {
			var ms [7]member
			if err := c.projectMembers(stepMembers(&t.steps[i], &ms), n.elems); err != nil {
				return err
			}
		}
	case kindNeeds:
		var ms [3]member
		return c.projectMembers(needsMembers(t.needs, &ms), n)
	}
	return nil
}

// projectMembers projects an object given as members.
func (c *canon) projectMembers(ms []member, n *readNode) error {
	if n.whole || n.elems != nil {
		t, err := objectTerm(ms)
		if err != nil {
			return err
		}
		c.value(t.Value)
		return nil
	}
	return projectObject(c, n, len(ms), func(f readField) (typed, bool) {
		i := slices.IndexFunc(ms, func(m member) bool { return string(m.key.Value.(ast.String)) == f.name })
		if i < 0 {
			return typed{}, false
		}
		return ms[i].val, true
	}, c.projectTyped)
}

// projectObject writes an object read in part: its tag, its size when n is sized, and
// for each member n reads by name its absence or, through sub, its projection. get
// looks a member up.
func projectObject[V any](c *canon, n *readNode, size int, get func(readField) (V, bool), sub func(V, *readNode) error) error {
	c.tag(tagObject)
	if n.sized {
		c.length(size)
	}
	for _, f := range n.order {
		v, ok := get(f)
		if !ok {
			c.tag(tagAbsent)
			continue
		}
		c.tag(tagPresent)
		if err := sub(v, f.node); err != nil {
			return err
		}
	}
	return nil
}

// projectAny projects a JSON-shaped Go value: maps and slices read in part are walked,
// strings written directly, anything else converted as PlanInput converts it.
func (c *canon) projectAny(x any, n *readNode) error {
	switch v := x.(type) {
	case string:
		c.text(tagString, v)
		return nil
	case map[string]any:
		if v != nil && !n.whole && n.elems == nil {
			return projectObject(c, n, len(v),
				func(f readField) (any, bool) { e, ok := v[f.name]; return e, ok }, c.projectAny)
		}
	case []any:
		if v != nil && !n.whole {
			c.tag(tagArray)
			c.length(len(v))
			if n.elems != nil {
				for _, e := range v {
					if err := c.projectAny(e, n.elems); err != nil {
						return err
					}
				}
			}
			return nil
		}
	}
	val, err := valueOf(x)
	if err != nil {
		return err
	}
	c.project(val, n)
	return nil
}

// value writes all of v.
func (c *canon) value(v ast.Value) {
	switch x := v.(type) {
	case ast.Null:
		c.tag(tagNull)
	case ast.Boolean:
		if x {
			c.tag(tagTrue)
		} else {
			c.tag(tagFalse)
		}
	case ast.String:
		c.text(tagString, string(x))
	case ast.Number:
		c.text(tagNumber, string(x))
	case *ast.Array:
		c.tag(tagArray)
		c.length(x.Len())
		for i := range x.Len() {
			c.value(x.Elem(i).Value)
		}
	case ast.Object:
		c.tag(tagObject)
		c.length(x.Len())
		keys := x.Keys()
		slices.SortFunc(keys, func(a, b *ast.Term) int { return a.Value.Compare(b.Value) })
		for _, k := range keys {
			c.value(k.Value)
			c.value(x.Get(k).Value)
		}
	case ast.Set:
		c.tag(tagSet)
		c.length(x.Len())
		sorted := x.Sorted()
		for i := range sorted.Len() {
			c.value(sorted.Elem(i).Value)
		}
	default:
		// Inputs are JSON-shaped; anything else is written as its Rego text.
		c.text(tagOther, v.String())
	}
}
