package decisionlog

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/engine"
)

// encoder writes events as encoding/json.Marshal does (struct fields in order, map
// keys sorted, HTML characters escaped, the same numbers), byte for byte, without
// reflection over the payload: the worker's main cost was encoding/json walking the
// payload maps. Values it has no fast path for are encoded by encoding/json. One
// encoder serves one goroutine; its buffer is reused.
type encoder struct {
	buf  []byte
	keys []string // scratch for sorting map keys, used as a stack
	// plans remembers where each plan of the event being encoded was written, so an
	// accepted plan that is the incoming plan (a review that rewrote nothing) is copied.
	plans map[*engine.RoutingPlan][2]int
}

// encode returns e's JSON encoding in a new slice.
func (enc *encoder) encode(e *Event) ([]byte, error) {
	enc.buf = enc.buf[:0]
	clear(enc.plans)
	if err := enc.event(e); err != nil {
		return nil, err
	}
	return slices.Clone(enc.buf), nil
}

func (enc *encoder) event(e *Event) error {
	enc.buf = append(enc.buf, `{"schema_version":`...)
	enc.buf = strconv.AppendInt(enc.buf, int64(e.SchemaVersion), 10)
	enc.member("kind", e.Kind, false)
	enc.member("decision_id", e.DecisionID, true)
	enc.buf = append(enc.buf, `,"timestamp":`...)
	if err := enc.time(e.Timestamp); err != nil {
		return err
	}
	enc.member("request_id", e.RequestID, true)
	enc.member("stage", string(e.Stage), true)
	enc.member("operation", string(e.Operation), true)
	enc.member("step_id", e.StepID, true)
	enc.member("generation", e.Generation, true)
	enc.member("policy_revision", e.PolicyRevision, true)
	enc.member("outcome", e.Outcome, false)
	enc.member("cause", string(e.Cause), true)
	if len(e.Hooks) > 0 {
		enc.buf = append(enc.buf, `,"hooks":[`...)
		for i := range e.Hooks {
			if i > 0 {
				enc.buf = append(enc.buf, ',')
			}
			if err := enc.hook(&e.Hooks[i]); err != nil {
				return err
			}
		}
		enc.buf = append(enc.buf, ']')
	}
	for _, m := range []struct {
		name  string
		value any
		set   bool
	}{
		{"violations", e.Violations, len(e.Violations) > 0},
		{"denial", e.Denial, e.Denial != nil},
		{"would_deny", e.WouldDeny, len(e.WouldDeny) > 0},
	} {
		if m.set {
			enc.key(m.name)
			if err := enc.marshal(m.value); err != nil {
				return err
			}
		}
	}
	enc.buf = append(enc.buf, `,"duration_ms":`...)
	if err := enc.float(e.DurationMS); err != nil {
		return err
	}
	for _, m := range []struct {
		name  string
		value map[string]any
	}{{"input", e.Input}, {"output", e.Output}} {
		if len(m.value) > 0 {
			enc.key(m.name)
			if err := enc.value(m.value); err != nil {
				return err
			}
		}
	}
	for _, m := range []struct {
		name  string
		value []string
	}{{"erased", e.Erased}, {"masked", e.Masked}} {
		if len(m.value) > 0 {
			enc.key(m.name)
			enc.strings(m.value)
		}
	}
	if e.Shadow != nil {
		enc.key("shadow")
		if err := enc.marshal(e.Shadow); err != nil {
			return err
		}
	}
	enc.buf = append(enc.buf, '}')
	return nil
}

func (enc *encoder) hook(h *Hook) error {
	enc.buf = append(enc.buf, `{"hook":`...)
	enc.buf = appendString(enc.buf, h.Name)
	enc.member("status", string(h.Status), false)
	enc.member("failure_policy", string(h.FailurePolicy), true)
	enc.member("action", string(h.Action), true)
	enc.member("reason", string(h.Reason), true)
	enc.member("cause", string(h.Cause), true)
	enc.member("mode", string(h.Mode), true)
	enc.buf = append(enc.buf, `,"duration_ms":`...)
	if err := enc.float(h.DurationMS); err != nil {
		return err
	}
	enc.buf = append(enc.buf, '}')
	return nil
}

// key writes a member's name after a preceding member.
func (enc *encoder) key(name string) {
	enc.buf = append(enc.buf, ',')
	enc.buf = appendString(enc.buf, name)
	enc.buf = append(enc.buf, ':')
}

// member writes a string member after a preceding member; an omitempty one is left out
// when empty.
func (enc *encoder) member(name, value string, omitempty bool) {
	if omitempty && value == "" {
		return
	}
	enc.key(name)
	enc.buf = appendString(enc.buf, value)
}

// value writes a payload value: JSON-shaped Go values and the wire types a payload
// holds have fast paths; anything else goes to encoding/json.
func (enc *encoder) value(v any) error {
	switch t := v.(type) {
	case nil:
		enc.buf = append(enc.buf, "null"...)
	case string:
		enc.buf = appendString(enc.buf, t)
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
		for i, e := range t {
			if i > 0 {
				enc.buf = append(enc.buf, ',')
			}
			if err := enc.value(e); err != nil {
				return err
			}
		}
		enc.buf = append(enc.buf, ']')
	case []string:
		enc.strings(t)
	case *engine.RoutingPlan:
		return enc.plan(t)
	case []engine.RoutingStep:
		if t == nil {
			enc.buf = append(enc.buf, "null"...)
			return nil
		}
		enc.buf = append(enc.buf, '[')
		for i := range t {
			if i > 0 {
				enc.buf = append(enc.buf, ',')
			}
			if err := enc.view(engine.ViewOf(&t[i])); err != nil {
				return err
			}
		}
		enc.buf = append(enc.buf, ']')
	case *engine.ExecutionResult:
		return enc.view(engine.ViewOf(t))
	default:
		return enc.marshal(v)
	}
	return nil
}

// plan writes p, or copies it when this event wrote it already.
func (enc *encoder) plan(p *engine.RoutingPlan) error {
	if at, ok := enc.plans[p]; ok && p != nil {
		enc.buf = append(enc.buf, enc.buf[at[0]:at[1]]...)
		return nil
	}
	start := len(enc.buf)
	if err := enc.view(engine.ViewOf(p)); err != nil {
		return err
	}
	if p != nil {
		if enc.plans == nil {
			enc.plans = map[*engine.RoutingPlan][2]int{}
		}
		enc.plans[p] = [2]int{start, len(enc.buf)}
	}
	return nil
}

// object writes m with its keys sorted, as encoding/json does.
func (enc *encoder) object(m map[string]any) error {
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
	for i, k := range keys {
		if i > 0 {
			enc.buf = append(enc.buf, ',')
		}
		enc.buf = appendString(enc.buf, k)
		enc.buf = append(enc.buf, ':')
		if err := enc.value(m[k]); err != nil {
			return err
		}
	}
	enc.buf = append(enc.buf, '}')
	enc.keys = enc.keys[:base]
	return nil
}

// view writes a wire value as its View shows it (the View renders it as encoding/json
// does).
func (enc *encoder) view(v engine.View) error {
	switch v.Kind() {
	case engine.ViewNull:
		enc.buf = append(enc.buf, "null"...)
	case engine.ViewBool:
		enc.buf = strconv.AppendBool(enc.buf, v.Bool())
	case engine.ViewInt:
		enc.buf = strconv.AppendInt(enc.buf, v.Int(), 10)
	case engine.ViewString:
		enc.buf = appendString(enc.buf, v.Str())
	case engine.ViewTime:
		return enc.time(v.Time())
	case engine.ViewValue:
		return enc.value(v.Value())
	case engine.ViewArray:
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
	case engine.ViewObject:
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
			enc.buf = appendString(enc.buf, name)
			enc.buf = append(enc.buf, ':')
			if err := enc.view(f); err != nil {
				return err
			}
		}
		enc.buf = append(enc.buf, '}')
	}
	return nil
}

func (enc *encoder) strings(ss []string) {
	if ss == nil {
		enc.buf = append(enc.buf, "null"...)
		return
	}
	enc.buf = append(enc.buf, '[')
	for i, s := range ss {
		if i > 0 {
			enc.buf = append(enc.buf, ',')
		}
		enc.buf = appendString(enc.buf, s)
	}
	enc.buf = append(enc.buf, ']')
}

// marshal writes v with encoding/json.
func (enc *encoder) marshal(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	enc.buf = append(enc.buf, data...)
	return nil
}

// time writes t as time.Time.MarshalJSON does, refusing the years it refuses.
func (enc *encoder) time(t time.Time) error {
	if y := t.Year(); y < 0 || y >= 10000 {
		return fmt.Errorf("decision event: time %v: year outside of range [0,9999]", t)
	}
	enc.buf = append(enc.buf, '"')
	enc.buf = t.AppendFormat(enc.buf, time.RFC3339Nano)
	enc.buf = append(enc.buf, '"')
	return nil
}

// float writes f as encoding/json writes a float64: like ES6's number to string
// conversion; NaN and infinities have no encoding.
func (enc *encoder) float(f float64) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("decision event: unsupported value %v", f)
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

// appendString appends s quoted as encoding/json quotes it: HTML characters, U+2028
// and U+2029 escaped, invalid UTF-8 as U+FFFD.
func appendString(dst []byte, s string) []byte {
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
