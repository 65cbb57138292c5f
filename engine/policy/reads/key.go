package reads

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/policy/internal/regovalue"
)

// Key returns the memo key of input views: what AppendKey appends.
func (t *Tree) Key(input engine.View) (string, error) {
	key, err := t.AppendKey(nil, input)
	return string(key), err
}

// AppendKey appends to dst the key of input views: an unambiguous canonical encoding of
// the parts an evaluation under t may observe, computed without building its Rego value
// (only what is read whole is converted). An encoding of at most MaxRawKey bytes is the
// key itself, so that a short key costs no hash; a longer one is replaced by a zero byte
// (no encoding starts with one) and its SHA-256, so that keys stay small. AppendKey
// fails where Input fails (a part that may be observed does not convert), so that a
// memoized decision never answers an input the evaluation would reject. Inputs with
// equal keys look the same to every evaluation the analysis covers.
func (t *Tree) AppendKey(dst []byte, input engine.View) ([]byte, error) {
	c, err := canon(dst).view(input, t.root)
	if err != nil {
		return dst, err
	}
	return shortKey(c, len(dst)), nil
}

// MaxRawKey is the longest encoding that is its own key (AppendKey): a key is at most
// this long.
const MaxRawKey = 512

// shortKey replaces buf[start:], an encoding, by its digest form when it is longer than
// MaxRawKey.
func shortKey(buf []byte, start int) []byte {
	if len(buf)-start <= MaxRawKey {
		return buf
	}
	sum := sha256.Sum256(buf[start:])
	return append(append(buf[:start], 0), sum[:]...)
}

// canon is an unambiguous encoding of the parts of a Rego input value that a readNode
// says may be observed: every value is a type tag followed by its content (a scalar
// observed only by its type is its tag alone), strings and containers carry their
// lengths, object members go in key order. Two inputs with equal
// encodings look the same to every evaluation the analysis covers, so the encoding (or
// a strong hash of it) can key decisions. Numbers are written as their text: inputs
// that differ only in how a number is spelled get different keys, which costs a memo
// hit, never a wrong decision. Its methods append to it and return the result, as
// append does; the walk over an object read in part is written out in each of them,
// without callbacks, as a memo hit spends most of its time here.
type canon []byte

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
	tagBool // a boolean of which only the type is observed
)

func (c canon) length(n int) canon { return binary.AppendUvarint(c, uint64(n)) }

func (c canon) text(t byte, s string) canon {
	if len(s) < 0x80 { // its length is one byte
		return append(append(c, t, byte(len(s))), s...)
	}
	return append(append(c, t).length(len(s)), s...)
}

// str writes the string s at n: in full when n observes a scalar's value, else its type.
func (c canon) str(s string, n *readNode) canon {
	if !n.scalarValue() {
		return append(c, tagString)
	}
	return c.text(tagString, s)
}

// presentString writes a present member that is the string s, at n.
func (c canon) presentString(s string, n *readNode) canon {
	if n.scalarValue() && len(s) < 0x80 { // the common case, in one append
		return append(append(c, tagPresent, tagString, byte(len(s))), s...)
	}
	return append(c, tagPresent).str(s, n)
}

// scalar writes the scalar v at n: in full when n observes its value, else its type.
func (c canon) scalar(v ast.Value, n *readNode) canon {
	if n.scalarValue() {
		return c.value(v)
	}
	switch v.(type) {
	case ast.Null:
		return append(c, tagNull)
	case ast.Boolean:
		return append(c, tagBool)
	case ast.String:
		return append(c, tagString)
	case ast.Number:
		return append(c, tagNumber)
	}
	return append(c, tagOther)
}

// presence writes whether a member read by name is present.
func (c canon) presence(present bool) canon {
	if present {
		return append(c, tagPresent)
	}
	return append(c, tagAbsent)
}

// project writes what n says may be observed of v: all of it when n is read whole;
// otherwise a scalar's type, and its value when n observes it, an array's length and
// what is read of its elements, an object's size when n is sized and, for each member
// read by name, its absence or its projection.
func (c canon) project(v ast.Value, n *readNode) canon {
	if n.whole {
		return c.value(v)
	}
	switch x := v.(type) {
	case *ast.Array:
		c = append(c, tagArray).length(x.Len())
		if n.elems != nil {
			for i := range x.Len() {
				c = c.project(x.Elem(i).Value, n.elems)
			}
		}
		return c
	case ast.Object:
		if n.elems != nil {
			return c.value(v)
		}
		c = append(c, tagObject)
		if n.sized {
			c = c.length(x.Len())
		}
		for _, f := range n.order {
			t := x.Get(f.key)
			if c = c.presence(t != nil); t != nil {
				c = c.project(t.Value, f.node)
			}
		}
		return c
	case ast.Set:
		return c.value(v)
	}
	return c.scalar(v, n)
}

// view writes what project would write for the Rego value of v (as regovalue converts
// it), converting only what n reads whole of its JSON-shaped values.
func (c canon) view(v engine.View, n *readNode) (canon, error) {
	var err error
	switch v.Kind() {
	case engine.ViewNull:
		c = append(c, tagNull)
	case engine.ViewBool:
		c = c.scalar(ast.Boolean(v.Bool()), n)
	case engine.ViewInt:
		if !n.scalarValue() {
			return append(c, tagNumber), nil
		}
		var digits [20]byte
		d := strconv.AppendInt(digits[:0], v.Int(), 10)
		c = append(append(c, tagNumber).length(len(d)), d...)
	case engine.ViewString:
		c = c.str(v.Str(), n)
	case engine.ViewTime:
		s, err := regovalue.TimeString(v.Time())
		if err != nil {
			return c, err
		}
		c = c.str(s, n)
	case engine.ViewValue:
		return c.anyValue(v.Value(), n)
	case engine.ViewArray:
		if n.whole {
			return c.wholeView(v)
		}
		c = append(c, tagArray).length(v.Len())
		if n.elems != nil {
			for i := range v.Len() {
				if c, err = c.view(v.Index(i), n.elems); err != nil {
					return c, err
				}
			}
		}
	case engine.ViewObject:
		if n.whole || n.elems != nil {
			return c.wholeView(v)
		}
		c = append(c, tagObject)
		if n.sized {
			c = c.length(v.Len())
		}
		for k, i := range n.indexes(v) {
			if i < 0 {
				c = append(c, tagAbsent)
				continue
			}
			// Strings and maps are written as view writes them, without building their View.
			if s, present, isString := v.StringMember(i); isString {
				if present {
					c = c.presentString(s, n.order[k].node)
				} else {
					c = append(c, tagAbsent)
				}
				continue
			}
			if m, present, isMap := v.MapMember(i); isMap {
				switch {
				case !present:
					c = append(c, tagAbsent)
				case m == nil:
					c = append(c, tagPresent, tagNull)
				default:
					if c, err = append(c, tagPresent).anyValue(m, n.order[k].node); err != nil {
						return c, err
					}
				}
				continue
			}
			_, m, ok := v.Field(i)
			if !ok {
				c = append(c, tagAbsent)
				continue
			}
			if c, err = append(c, tagPresent).view(m, n.order[k].node); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

// wholeView writes all of v.
func (c canon) wholeView(v engine.View) (canon, error) {
	t, err := regovalue.Term(v)
	if err != nil {
		return c, err
	}
	return c.value(t.Value), nil
}

// member returns v's member at index i (of n.indexes(v)), and whether it is present.
func member(v engine.View, i int) (engine.View, bool) {
	if i < 0 {
		return engine.View{}, false
	}
	_, m, ok := v.Field(i)
	return m, ok
}

// indexes returns the index in v (engine.View.MemberIndex) of each of n's fields, in
// n.order's order. They are kept for the next object of v's type, so that reading
// inputs of one shape compares no names.
func (n *readNode) indexes(v engine.View) []int {
	at := n.at.Load()
	if at == nil || at.typ != v.Type() {
		at = &membersAt{typ: v.Type(), index: make([]int, len(n.order))}
		for k, f := range n.order {
			at.index[k] = v.MemberIndex(f.name)
		}
		n.at.Store(at)
	}
	return at.index
}

// anyValue projects a JSON-shaped Go value: maps and slices read in part are walked,
// strings written directly, anything else converted as regovalue converts it.
func (c canon) anyValue(x any, n *readNode) (canon, error) {
	var err error
	switch v := x.(type) {
	case string:
		return c.str(v, n), nil
	case map[string]any:
		if v != nil && !n.whole && n.elems == nil {
			c = append(c, tagObject)
			if n.sized {
				c = c.length(len(v))
			}
			for _, f := range n.order {
				e, ok := v[f.name]
				if !ok {
					c = append(c, tagAbsent)
					continue
				}
				if s, isString := e.(string); isString { // as anyValue writes it
					c = c.presentString(s, f.node)
					continue
				}
				if c, err = append(c, tagPresent).anyValue(e, f.node); err != nil {
					return c, err
				}
			}
			return c, nil
		}
	case []any:
		if v != nil && !n.whole {
			c = append(c, tagArray).length(len(v))
			if n.elems != nil {
				for _, e := range v {
					if c, err = c.anyValue(e, n.elems); err != nil {
						return c, err
					}
				}
			}
			return c, nil
		}
	}
	val, err := regovalue.Of(x)
	if err != nil {
		return c, err
	}
	return c.project(val, n), nil
}

// value writes all of v.
func (c canon) value(v ast.Value) canon {
	switch x := v.(type) {
	case ast.Null:
		return append(c, tagNull)
	case ast.Boolean:
		if x {
			return append(c, tagTrue)
		}
		return append(c, tagFalse)
	case ast.String:
		return c.text(tagString, string(x))
	case ast.Number:
		return c.text(tagNumber, string(x))
	case *ast.Array:
		c = append(c, tagArray).length(x.Len())
		for i := range x.Len() {
			c = c.value(x.Elem(i).Value)
		}
		return c
	case ast.Object:
		c = append(c, tagObject).length(x.Len())
		keys := x.Keys()
		slices.SortFunc(keys, func(a, b *ast.Term) int { return a.Value.Compare(b.Value) })
		for _, k := range keys {
			c = c.value(k.Value).value(x.Get(k).Value)
		}
		return c
	case ast.Set:
		c = append(c, tagSet).length(x.Len())
		sorted := x.Sorted()
		for i := range sorted.Len() {
			c = c.value(sorted.Elem(i).Value)
		}
		return c
	}
	// Inputs are JSON-shaped; anything else is written as its Rego text.
	return c.text(tagOther, v.String())
}
