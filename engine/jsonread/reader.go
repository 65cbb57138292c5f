// Package jsonread is a fast path for decoding the stage API's hot request bodies
// without reflection. A Reader accepts a subset of JSON: the texts for which it can
// produce exactly the value encoding/json decodes (with DisallowUnknownFields) into the
// same Go types. On anything outside that subset — a syntax error, a key in another
// letter case, a duplicate field, an escaped surrogate, a number out of range, deep
// nesting — a method reports false, and the caller decodes the whole text again with
// encoding/json, which then gives its own value or error. So the fast path changes
// speed, never an answer: FuzzReader_AgreesWithEncodingJSON holds it to that.
package jsonread

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxDepth is how deep a Reader nests containers; deeper texts go to encoding/json.
const maxDepth = 512

// Reader reads one JSON text from a byte slice. Its methods read the next value and
// report whether it was inside the subset; after a false the Reader is spent.
type Reader struct {
	data  []byte
	pos   int
	depth int
	buf   []byte // unescaped string bytes
}

// New returns a Reader over data.
func New(data []byte) *Reader { return &Reader{data: data} }

// End reports whether only whitespace is left: the text was one value.
func (r *Reader) End() bool {
	r.space()
	return r.pos == len(r.data)
}

// Trailing returns the offset of the first byte of data at or after from that is not
// JSON whitespace, or -1 when there is none: where a text that should hold one value
// goes on after it (from is where the value ended, as a Decoder's InputOffset says).
// Decoder.More cannot tell: it is false before a stray ] or }.
func Trailing(data []byte, from int64) int {
	r := Reader{data: data, pos: int(from)}
	if r.End() {
		return -1
	}
	return r.pos
}

func (r *Reader) space() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, 0 at the end.
func (r *Reader) peek() byte {
	r.space()
	if r.pos == len(r.data) {
		return 0
	}
	return r.data[r.pos]
}

// literal consumes word (true, false, null) when it is next.
func (r *Reader) literal(word string) bool {
	if r.peek() != word[0] || len(r.data)-r.pos < len(word) || string(r.data[r.pos:r.pos+len(word)]) != word {
		return false
	}
	r.pos += len(word)
	return true
}

// Null consumes a null when it is next and reports whether it did.
func (r *Reader) Null() bool { return r.literal("null") }

// Object reads an object, calling field for each member with its key (valid until
// the next call); field reads the member's value and reports whether it could. Keys
// with escapes are outside the subset.
func (r *Reader) Object(field func(key []byte) bool) bool {
	return r.container('{', '}', func() bool {
		key, ok := r.key()
		if !ok || r.peek() != ':' {
			return false
		}
		r.pos++
		return field(key)
	})
}

// Array reads an array, calling elem for each element; elem reads it and reports
// whether it could.
func (r *Reader) Array(elem func() bool) bool { return r.container('[', ']', elem) }

// container reads the elements between begin and end, separated by commas, calling
// elem for each.
func (r *Reader) container(begin, end byte, elem func() bool) bool {
	if r.peek() != begin || !r.enter() {
		return false
	}
	r.pos++
	if r.peek() == end {
		r.pos++
		r.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch r.peek() {
		case ',':
			r.pos++
		case end:
			r.pos++
			r.depth--
			return true
		default:
			return false
		}
	}
}

func (r *Reader) enter() bool {
	r.depth++
	return r.depth <= maxDepth
}

// key reads an object key without escapes, returning its bytes.
func (r *Reader) key() ([]byte, bool) {
	if r.peek() != '"' {
		return nil, false
	}
	start := r.pos + 1
	ascii := true
	for i := start; i < len(r.data); i++ {
		switch b := r.data[i]; {
		case b == '"':
			k := r.data[start:i]
			if !ascii && !utf8.Valid(k) {
				return nil, false
			}
			r.pos = i + 1
			return k, true
		case b == '\\' || b < 0x20:
			return nil, false
		case b >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// String reads a string into dst.
func (r *Reader) String(dst *string) bool {
	if r.peek() != '"' {
		return false
	}
	start := r.pos + 1
	ascii := true
	for i := start; i < len(r.data); i++ {
		switch b := r.data[i]; {
		case b == '"':
			s := r.data[start:i]
			if !ascii && !utf8.Valid(s) {
				return false
			}
			r.pos = i + 1
			*dst = string(s)
			return true
		case b == '\\':
			return r.escaped(dst, start, i)
		case b < 0x20:
			return false
		case b >= utf8.RuneSelf:
			ascii = false
		}
	}
	return false
}

// escaped finishes reading into dst a string that starts at start and has its first
// escape at esc.
func (r *Reader) escaped(dst *string, start, esc int) bool {
	buf := append(r.buf[:0], r.data[start:esc]...)
	i := esc
	for i < len(r.data) {
		b := r.data[i]
		switch {
		case b == '"':
			r.pos = i + 1
			r.buf = buf
			if !utf8.Valid(buf) {
				return false
			}
			*dst = string(buf)
			return true
		case b < 0x20:
			return false
		case b != '\\':
			buf = append(buf, b)
			i++
			continue
		}
		if i+1 >= len(r.data) {
			return false
		}
		switch e := r.data[i+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if i+6 > len(r.data) {
				return false
			}
			c, err := strconv.ParseUint(string(r.data[i+2:i+6]), 16, 16)
			if err != nil || utf8.RuneLen(rune(c)) < 0 { // surrogates are encoding/json's to pair
				return false
			}
			buf = utf8.AppendRune(buf, rune(c))
			i += 6
			continue
		default:
			return false
		}
		i += 2
	}
	return false
}

// Bool reads true or false into dst.
func (r *Reader) Bool(dst *bool) bool {
	switch {
	case r.literal("true"):
		*dst = true
	case r.literal("false"):
		*dst = false
	default:
		return false
	}
	return true
}

// number reads a number as written, checking JSON's grammar:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *Reader) number() ([]byte, bool) {
	r.space()
	d, start := r.data, r.pos
	i := start
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = digits(d, i)
	default:
		return nil, false
	}
	if i < len(d) && d[i] == '.' {
		j := digits(d, i+1)
		if j == i+1 {
			return nil, false
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := digits(d, i)
		if j == i {
			return nil, false
		}
		i = j
	}
	r.pos = i
	return d[start:i], true
}

func digits(d []byte, i int) int {
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	return i
}

// Int reads into dst an integer that fits an int, as encoding/json decodes one into
// an int (no fraction, no exponent).
func (r *Reader) Int(dst *int) bool {
	n, ok := r.number()
	if !ok {
		return false
	}
	v, err := strconv.ParseInt(string(n), 10, strconv.IntSize)
	*dst = int(v)
	return err == nil
}

// Float reads a number into dst; out of range is outside the subset.
func (r *Reader) Float(dst *float64) bool {
	n, ok := r.number()
	if !ok {
		return false
	}
	v, err := strconv.ParseFloat(string(n), 64)
	*dst = v
	return err == nil
}

// Time reads a string into dst with time.Time's UnmarshalJSON, which encoding/json
// hands the string as written.
func (r *Reader) Time(dst *time.Time) bool {
	r.space()
	start := r.pos
	var s string
	return r.String(&s) && dst.UnmarshalJSON(r.data[start:r.pos]) == nil
}

// Strings reads an array of strings into dst.
func (r *Reader) Strings(dst *[]string) bool {
	out := []string{}
	ok := r.Array(func() bool {
		out = append(out, "")
		return r.String(&out[len(out)-1])
	})
	*dst = out
	return ok
}

// Map reads an object into dst as encoding/json decodes one into an interface (the
// last of duplicate keys wins).
func (r *Reader) Map(dst *map[string]any) bool {
	if r.peek() != '{' {
		return false
	}
	m := map[string]any{}
	ok := r.Object(func(key []byte) bool {
		var v any
		ok := r.Value(&v)
		m[string(key)] = v
		return ok
	})
	*dst = m
	return ok
}

// Value reads any value into dst as encoding/json decodes one into an interface:
// objects as map[string]any, arrays as []any, numbers as float64.
func (r *Reader) Value(dst *any) bool {
	switch b := r.peek(); {
	case b == '{':
		var m map[string]any
		ok := r.Map(&m)
		*dst = m
		return ok
	case b == '[':
		out := []any{}
		ok := r.Array(func() bool {
			out = append(out, nil)
			return r.Value(&out[len(out)-1])
		})
		*dst = out
		return ok
	case b == '"':
		var s string
		ok := r.String(&s)
		*dst = s
		return ok
	case b == 't' || b == 'f':
		var v bool
		ok := r.Bool(&v)
		*dst = v
		return ok
	case b == 'n':
		*dst = nil
		return r.Null()
	default:
		var f float64
		ok := r.Float(&f)
		*dst = f
		return ok
	}
}

// Raw reads any value into dst as it is written, as encoding/json decodes one into a
// json.RawMessage, but as a slice of the text rather than a copy.
func (r *Reader) Raw(dst *[]byte) bool {
	r.space()
	start := r.pos
	if !r.skip() {
		return false
	}
	*dst = r.data[start:r.pos]
	return true
}

// skip reads any value, keeping nothing of it.
func (r *Reader) skip() bool {
	switch r.peek() {
	case '{':
		return r.Object(func([]byte) bool { return r.skip() })
	case '[':
		return r.Array(r.skip)
	case '"':
		return r.skipString()
	case 't':
		return r.literal("true")
	case 'f':
		return r.literal("false")
	case 'n':
		return r.Null()
	}
	_, ok := r.number()
	return ok
}

// skipString reads a string of valid UTF-8 and valid escapes, keeping nothing of it.
func (r *Reader) skipString() bool {
	start := r.pos + 1
	ascii := true
	for i := start; i < len(r.data); i++ {
		switch b := r.data[i]; {
		case b == '"':
			if !ascii && !utf8.Valid(r.data[start:i]) {
				return false
			}
			r.pos = i + 1
			return true
		case b < 0x20:
			return false
		case b >= utf8.RuneSelf:
			ascii = false
		case b == '\\':
			if i+1 == len(r.data) {
				return false
			}
			switch r.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+6 > len(r.data) || !hex4(r.data[i+2:i+6]) {
					return false
				}
				i += 5
			default:
				return false
			}
		}
	}
	return false
}

// hex4 reports whether d is four hex digits.
func hex4(d []byte) bool {
	for _, c := range d {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Struct reads an object into a struct whose JSON field names are names, calling
// field with the index of each member's name to read its value. A member set to null
// is skipped: encoding/json leaves a scalar field as it was and sets a pointer, map or
// slice to nil, which for a struct the caller starts at its zero value is the same. A
// name that is not among names (encoding/json matches other letter cases too) or that
// comes twice (encoding/json lets the last win, merging some kinds of values) is
// outside the subset. Struct panics for more than 64 names.
func (r *Reader) Struct(names []string, field func(i int) bool) bool {
	if len(names) > 64 {
		panic("jsonread: Struct reads at most 64 names")
	}
	var set uint64
	return r.Object(func(key []byte) bool {
		i := slices.Index(names, string(key))
		if i < 0 || set&(1<<i) != 0 {
			return false
		}
		set |= 1 << i
		return r.Null() || field(i)
	})
}

// Fields returns want, the JSON member names a reader of struct type T reads in
// Struct's order, after checking that they are T's names in field order but "-" and
// those in leftOut (which the reader leaves to encoding/json). It panics otherwise:
// called when a package is initialized, it makes a field added to T without its
// reader fail every test and every start instead of going unread.
func Fields[T any](want []string, leftOut ...string) []string {
	var names []string
	for f := range reflect.TypeFor[T]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name // as encoding/json names an untagged field
		}
		if f.IsExported() && name != "-" && !slices.Contains(leftOut, name) {
			names = append(names, name)
		}
	}
	if !slices.Equal(names, want) {
		panic(fmt.Sprintf("jsonread: the reader of %v reads %v, the type has %v", reflect.TypeFor[T](), want, names))
	}
	return want
}
