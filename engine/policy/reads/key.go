package reads

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"
	"sync"

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
// (only what is read whole is converted). An encoding of at most maxRawKey bytes is the
// key itself, so that a short key costs no hash; a longer one is replaced by a zero byte
// (no encoding starts with one) and its SHA-256, so that keys stay small. AppendKey
// fails where Input fails (a part that may be observed does not convert), so that a
// memoized decision never answers an input the evaluation would reject. Inputs with
// equal keys look the same to every evaluation the analysis covers.
func (t *Tree) AppendKey(dst []byte, input engine.View) ([]byte, error) {
	c := canonPool.Get().(*canon)
	defer func() {
		c.buf = nil
		canonPool.Put(c)
	}()
	start := len(dst)
	c.buf = dst
	if err := c.projectView(input, t.root); err != nil {
		return dst, err
	}
	return shortKey(c.buf, start), nil
}

// maxRawKey is the longest encoding that is its own key.
const maxRawKey = 512

// shortKey replaces buf[start:], an encoding, by its digest form when it is longer than
// maxRawKey.
func shortKey(buf []byte, start int) []byte {
	if len(buf)-start <= maxRawKey {
		return buf
	}
	sum := sha256.Sum256(buf[start:])
	return append(append(buf[:start], 0), sum[:]...)
}

// canon writes an unambiguous encoding of the parts of a Rego input value that a
// readNode says may be observed: every value is a type tag followed by its content,
// strings and containers carry their lengths, object members go in key order. Two inputs
// with equal encodings look the same to every evaluation the analysis covers, so the
// encoding (or a strong hash of it) can key decisions. Numbers are written as their text: inputs that
// differ only in how a number is spelled get different keys, which costs a memo hit, never
// a wrong decision.
type canon struct{ buf []byte }

// canonPool recycles canons: the method values a projection passes around make a canon
// escape, and a memo hit should allocate nothing. Their buffers are the callers'.
var canonPool = sync.Pool{New: func() any { return new(canon) }}

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
		_ = projectObject(c, n, x.Len,
			func(f *readField) (*ast.Term, bool) { t := x.Get(f.key); return t, t != nil },
			func(t *ast.Term, m *readNode) error { c.project(t.Value, m); return nil })
	default:
		c.value(v)
	}
}

// projectView writes what project would write for the Rego value of v (as regovalue
// converts it), converting only what n reads whole of its JSON-shaped values.
func (c *canon) projectView(v engine.View, n *readNode) error {
	switch v.Kind() {
	case engine.ViewNull:
		c.tag(tagNull)
	case engine.ViewBool:
		c.value(ast.Boolean(v.Bool()))
	case engine.ViewInt:
		var digits [20]byte
		d := strconv.AppendInt(digits[:0], v.Int(), 10)
		c.tag(tagNumber)
		c.length(len(d))
		c.buf = append(c.buf, d...)
	case engine.ViewString:
		c.text(tagString, v.Str())
	case engine.ViewTime:
		s, err := regovalue.TimeString(v.Time())
		if err != nil {
			return err
		}
		c.text(tagString, s)
	case engine.ViewValue:
		return c.projectAny(v.Value(), n)
	case engine.ViewArray:
		if n.whole {
			return c.wholeView(v)
		}
		c.tag(tagArray)
		c.length(v.Len())
		if n.elems != nil {
			for i := range v.Len() {
				if err := c.projectView(v.Index(i), n.elems); err != nil {
					return err
				}
			}
		}
	case engine.ViewObject:
		if n.whole || n.elems != nil {
			return c.wholeView(v)
		}
		return projectObject(c, n, v.Len, func(f *readField) (engine.View, bool) { return f.member(v) }, c.projectView)
	}
	return nil
}

// wholeView writes all of v.
func (c *canon) wholeView(v engine.View) error {
	t, err := regovalue.Term(v)
	if err != nil {
		return err
	}
	c.value(t.Value)
	return nil
}

// projectObject writes an object read in part: its tag, its size when n is sized, and
// for each member n reads by name its absence or, through sub, its projection. get
// looks a member up.
func projectObject[V any](c *canon, n *readNode, size func() int, get func(*readField) (V, bool), sub func(V, *readNode) error) error {
	c.tag(tagObject)
	if n.sized {
		c.length(size())
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

// member returns the member of v named f.name, and whether it is present.
func (f *readField) member(v engine.View) (engine.View, bool) {
	guess := int(f.guess.Load())
	i := v.MemberIndex(f.name, guess)
	if i < 0 {
		return engine.View{}, false
	}
	if i != guess {
		f.guess.Store(int32(i))
	}
	_, m, ok := v.Field(i)
	return m, ok
}

// projectAny projects a JSON-shaped Go value: maps and slices read in part are walked,
// strings written directly, anything else converted as regovalue converts it.
func (c *canon) projectAny(x any, n *readNode) error {
	switch v := x.(type) {
	case string:
		c.text(tagString, v)
		return nil
	case map[string]any:
		if v != nil && !n.whole && n.elems == nil {
			return projectObject(c, n, func() int { return len(v) },
				func(f *readField) (any, bool) { e, ok := v[f.name]; return e, ok }, c.projectAny)
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
	val, err := regovalue.Of(x)
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
