package policy

import (
	"encoding/binary"
	"slices"
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
// object's size and, for each member read by name, its absence or its projection.
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
		c.tag(tagObject)
		c.length(x.Len())
		for _, f := range n.order {
			if t := x.Get(f.key); t != nil {
				c.tag(tagPresent)
				c.project(t.Value, f.node)
			} else {
				c.tag(tagAbsent)
			}
		}
	default:
		c.value(v)
	}
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
		c.text(tagString, v.String())
	}
}
