package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// AppendJSON appends v's encoding as encoding/json.Marshal writes it (struct fields in
// order, map keys sorted, HTML characters escaped, the same numbers), byte for byte,
// without reflection for JSON-shaped Go values (map[string]any, []any, strings,
// numbers, booleans) and the wire types (RoutingPlan, its steps, ExecutionResult: read
// through their View). Anything else is encoded by encoding/json. Values encoding/json
// refuses (NaN, infinities, years outside 0–9999) are refused.
func AppendJSON(dst []byte, v any) ([]byte, error) {
	enc := jsonEncoders.Get().(*jsonEncoder)
	enc.buf = dst
	err := enc.value(v)
	out := enc.buf
	enc.buf, enc.keys, enc.depth = nil, enc.keys[:0], 0
	jsonEncoders.Put(enc)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// jsonEncoder is AppendJSON's state: the buffer it appends to and a stack of map keys
// being sorted.
type jsonEncoder struct {
	buf   []byte
	keys  []string
	depth int // containers open
}

// maxJSONDepth is how deep AppendJSON nests containers itself; deeper values (and
// values that contain themselves, which encoding/json refuses) go to encoding/json.
const maxJSONDepth = 1000

var jsonEncoders = sync.Pool{New: func() any { return new(jsonEncoder) }}

// value writes v: JSON-shaped Go values and the wire types have fast paths; anything
// else goes to encoding/json.
func (enc *jsonEncoder) value(v any) error {
	if enc.depth >= maxJSONDepth {
		return enc.marshal(v)
	}
	switch t := v.(type) {
	case nil:
		enc.buf = append(enc.buf, "null"...)
	case string:
		enc.buf = AppendJSONString(enc.buf, t)
	case bool:
		enc.buf = strconv.AppendBool(enc.buf, t)
	case float64:
		return enc.float(t)
	case int:
		enc.buf = strconv.AppendInt(enc.buf, int64(t), 10)
	case int64:
		enc.buf = strconv.AppendInt(enc.buf, t, 10)
	case map[string]any:
		return enc.object(t)
	case []any:
		if t == nil {
			enc.buf = append(enc.buf, "null"...)
			return nil
		}
		enc.buf = append(enc.buf, '[')
		enc.depth++
		for i, e := range t {
			if i > 0 {
				enc.buf = append(enc.buf, ',')
			}
			if err := enc.value(e); err != nil {
				return err
			}
		}
		enc.depth--
		enc.buf = append(enc.buf, ']')
	case []string:
		enc.strings(t)
	case *RoutingPlan:
		return enc.view(ViewOf(t))
	case []RoutingStep:
		if t == nil {
			enc.buf = append(enc.buf, "null"...)
			return nil
		}
		enc.buf = append(enc.buf, '[')
		for i := range t {
			if i > 0 {
				enc.buf = append(enc.buf, ',')
			}
			if err := enc.view(ViewOf(&t[i])); err != nil {
				return err
			}
		}
		enc.buf = append(enc.buf, ']')
	case *ExecutionResult:
		return enc.view(ViewOf(t))
	case time.Time:
		return enc.time(t)
	default:
		return enc.marshal(v)
	}
	return nil
}

// object writes m with its keys sorted, as encoding/json does.
func (enc *jsonEncoder) object(m map[string]any) error {
	if m == nil {
		enc.buf = append(enc.buf, "null"...)
		return nil
	}
	base := len(enc.keys)
	for k := range m {
		enc.keys = append(enc.keys, k)
	}
	keys := enc.keys[base:]
	slices.Sort(keys)
	enc.buf = append(enc.buf, '{')
	enc.depth++
	for i, k := range keys {
		if i > 0 {
			enc.buf = append(enc.buf, ',')
		}
		enc.buf = AppendJSONString(enc.buf, k)
		enc.buf = append(enc.buf, ':')
		if err := enc.value(m[k]); err != nil {
			return err
		}
	}
	enc.depth--
	enc.buf = append(enc.buf, '}')
	enc.keys = enc.keys[:base]
	return nil
}

// view writes a wire value as its View shows it (the View renders it as encoding/json
// does).
func (enc *jsonEncoder) view(v View) error {
	switch v.Kind() {
	case ViewNull:
		enc.buf = append(enc.buf, "null"...)
	case ViewBool:
		enc.buf = strconv.AppendBool(enc.buf, v.Bool())
	case ViewInt:
		enc.buf = strconv.AppendInt(enc.buf, v.Int(), 10)
	case ViewString:
		enc.buf = AppendJSONString(enc.buf, v.Str())
	case ViewTime:
		return enc.time(v.Time())
	case ViewValue:
		return enc.value(v.Value())
	case ViewArray:
		if ss, ok := v.Strings(); ok {
			enc.strings(ss)
			return nil
		}
		enc.buf = append(enc.buf, '[')
		for i := range v.Len() {
			if i > 0 {
				enc.buf = append(enc.buf, ',')
			}
			if err := enc.view(v.Index(i)); err != nil {
				return err
			}
		}
		enc.buf = append(enc.buf, ']')
	case ViewObject:
		enc.buf = append(enc.buf, '{')
		first := true
		for i := range v.NumField() {
			name, f, ok := v.Field(i)
			if !ok {
				continue
			}
			if !first {
				enc.buf = append(enc.buf, ',')
			}
			first = false
			enc.buf = AppendJSONString(enc.buf, name)
			enc.buf = append(enc.buf, ':')
			if err := enc.view(f); err != nil {
				return err
			}
		}
		enc.buf = append(enc.buf, '}')
	}
	return nil
}

func (enc *jsonEncoder) strings(ss []string) {
	if ss == nil {
		enc.buf = append(enc.buf, "null"...)
		return
	}
	enc.buf = append(enc.buf, '[')
	for i, s := range ss {
		if i > 0 {
			enc.buf = append(enc.buf, ',')
		}
		enc.buf = AppendJSONString(enc.buf, s)
	}
	enc.buf = append(enc.buf, ']')
}

// marshal writes v with encoding/json.
func (enc *jsonEncoder) marshal(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	enc.buf = append(enc.buf, data...)
	return nil
}

// time writes t as time.Time.MarshalJSON does, refusing what it refuses: a year that
// is not four digits wide, a zone offset of 24 hours or more.
func (enc *jsonEncoder) time(t time.Time) error {
	enc.buf = append(enc.buf, '"')
	start := len(enc.buf)
	b := t.AppendFormat(enc.buf, time.RFC3339Nano)
	if b[start+len("9999")] != '-' {
		return fmt.Errorf("json: time %v: year outside of range [0,9999]", t)
	}
	if b[len(b)-1] != 'Z' {
		c, hh := b[len(b)-len("Z07:00")], b[len(b)-len("07:00"):]
		if '0' <= c && c <= '9' || 10*(hh[0]-'0')+hh[1]-'0' >= 24 {
			return fmt.Errorf("json: time %v: timezone hour outside of range [0,23]", t)
		}
	}
	enc.buf = append(b, '"')
	return nil
}

// float writes f as encoding/json writes a float64: like ES6's number to string
// conversion; NaN and infinities have no encoding.
func (enc *jsonEncoder) float(f float64) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("json: unsupported value: %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(enc.buf, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	enc.buf = b
	return nil
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s quoted as encoding/json quotes it: HTML characters, U+2028
// and U+2029 escaped, invalid UTF-8 as U+FFFD.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
