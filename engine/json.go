package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// AppendJSON appends v's encoding as encoding/json.Marshal writes it (struct fields in
// order, map keys sorted, HTML characters escaped, the same numbers), byte for byte,
// without reflection for JSON-shaped Go values (map[string]any, []any, strings,
// numbers, booleans), the wire types (RoutingPlan, its steps, ExecutionResult: read
// through their View), a stage's invocations, execution records, request states and
// their runs, and a View (what the value it reads encodes to). Anything else is
// encoded by encoding/json. Values encoding/json refuses (NaN, infinities, years outside
// 0–9999) are refused.
func AppendJSON(dst []byte, v any) ([]byte, error) { return appendJSON(dst, v, false) }

// AppendJSONUnescapedHTML is AppendJSON as an encoding/json.Encoder with
// SetEscapeHTML(false) writes v (without the Encoder's newline): <, > and & as they
// are. The API's responses are written so.
func AppendJSONUnescapedHTML(dst []byte, v any) ([]byte, error) { return appendJSON(dst, v, true) }

func appendJSON(dst []byte, v any, noHTML bool) ([]byte, error) {
	enc := jsonEncoders.Get().(*jsonEncoder)
	enc.buf, enc.noHTML = dst, noHTML
	err := enc.value(v)
	out := enc.buf
	enc.buf, enc.members, enc.depth = nil, enc.members[:0], 0
	jsonEncoders.Put(enc)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// jsonEncoder is AppendJSON's state: the buffer it appends to and a stack of the
// members of the maps being written, sorted by key.
type jsonEncoder struct {
	buf     []byte
	members []member
	depth   int  // containers open
	noHTML  bool // <, > and & as they are, as an Encoder with SetEscapeHTML(false) writes
}

// member is a map member being written.
type member struct {
	key   string
	value any
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
		enc.string(t)
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
		return enc.view(planViews.View(t))
	case []RoutingStep:
		return array(enc, t, func(s *RoutingStep) error { return enc.view(stepViews.View(s)) })
	case *ExecutionResult:
		return enc.view(resultViews.View(t))
	case []Invocation:
		return array(enc, t, enc.invocation)
	case *ExecutionRecord:
		return enc.record(t)
	case *RequestState:
		return enc.state(t)
	case map[string]*StepRun:
		return enc.runs(t)
	case View:
		return enc.view(t)
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
	base := len(enc.members)
	for k, v := range m {
		enc.members = append(enc.members, member{k, v})
	}
	members := enc.members[base:]
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	enc.buf = append(enc.buf, '{')
	enc.depth++
	var err error
	for i, kv := range members {
		if i > 0 {
			enc.buf = append(enc.buf, ',')
		}
		enc.string(kv.key)
		enc.buf = append(enc.buf, ':')
		if err = enc.value(kv.value); err != nil {
			break
		}
	}
	enc.depth--
	enc.buf = append(enc.buf, '}')
	clear(enc.members[base:]) // the pooled encoder keeps no values (a nested map may have moved the stack)
	enc.members = enc.members[:base]
	return err
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
		enc.string(v.Str())
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
		for i := range v.s.fields {
			f := &v.s.fields[i]
			if !v.present(f) {
				continue
			}
			if !first {
				enc.buf = append(enc.buf, ',')
			}
			first = false
			if enc.noHTML {
				enc.buf = append(enc.buf, f.key...)
			} else {
				enc.buf = append(enc.buf, f.keyHTML...)
			}
			if err := enc.view(v.member(f)); err != nil {
				return err
			}
		}
		enc.buf = append(enc.buf, '}')
	}
	return nil
}

// array writes xs, elem writing each element; a nil slice is null.
func array[T any](enc *jsonEncoder, xs []T, elem func(*T) error) error {
	if xs == nil {
		enc.buf = append(enc.buf, "null"...)
		return nil
	}
	enc.buf = append(enc.buf, '[')
	for i := range xs {
		if i > 0 {
			enc.buf = append(enc.buf, ',')
		}
		if err := elem(&xs[i]); err != nil {
			return err
		}
	}
	enc.buf = append(enc.buf, ']')
	return nil
}

// invocation writes inv member by member as encoding/json does; its effects and
// findings, rare on the hot path, go to encoding/json.
func (enc *jsonEncoder) invocation(inv *Invocation) error {
	enc.member("{", "hook_name", inv.HookName)
	enc.member(",", "phase", string(inv.Phase))
	enc.member(",", "status", string(inv.Status))
	enc.buf = strconv.AppendInt(append(enc.buf, `,"sequence":`...), int64(inv.Sequence), 10)
	if inv.PlanPhase != 0 {
		enc.buf = strconv.AppendInt(append(enc.buf, `,"plan_phase":`...), int64(inv.PlanPhase), 10)
	}
	enc.buf = append(enc.buf, `,"started_at":`...)
	if err := enc.time(inv.StartedAt); err != nil {
		return err
	}
	enc.buf = strconv.AppendInt(append(enc.buf, `,"duration":`...), int64(inv.Duration), 10)
	enc.optional("error", inv.Error)
	if len(inv.Effects) > 0 {
		enc.buf = append(enc.buf, `,"effects":`...)
		if err := enc.marshal(inv.Effects); err != nil {
			return err
		}
	}
	if d := inv.Decision; d != nil {
		enc.member(`,"decision":{`, "failure_policy", string(d.FailurePolicy))
		enc.member(",", "action", string(d.Action))
		enc.member(",", "reason", string(d.Reason))
		enc.optional("cause", string(d.Cause))
		enc.buf = append(enc.buf, '}')
	}
	enc.optional("decision_id", inv.DecisionID)
	enc.optional("mode", string(inv.Mode))
	if len(inv.WouldDeny) > 0 {
		enc.buf = append(enc.buf, `,"would_deny":`...)
		if err := enc.marshal(inv.WouldDeny); err != nil {
			return err
		}
	}
	enc.optional("trace_id", inv.TraceID)
	enc.optional("span_id", inv.SpanID)
	enc.buf = append(enc.buf, '}')
	return nil
}

// The Viewers of the structs records and states hold.
var (
	phaseViews     = ViewerOf[PhaseRecord]()
	rejectionViews = ViewerOf[PlanRejection]()
	operationViews = ViewerOf[OperationRecord]()
	runViews       = ViewerOf[StepRun]()
	historyViews   = ViewerOf[HistoryStep]()
	flowViews      = ViewerOf[PhaseFlow]()
)

// viewOf returns the element writer of a slice of the structs views reads.
func viewOf[T any](enc *jsonEncoder, views Viewer[T]) func(*T) error {
	return func(p *T) error { return enc.view(views.View(p)) }
}

// record writes rec member by member as encoding/json does, its invocations as
// invocation does and its other parts through their Views. TestAppendJSON_EveryFieldSet
// fails when a field is added to ExecutionRecord that it does not write.
func (enc *jsonEncoder) record(rec *ExecutionRecord) error {
	if rec == nil {
		enc.buf = append(enc.buf, "null"...)
		return nil
	}
	enc.buf = strconv.AppendInt(append(enc.buf, `{"schema_version":`...), int64(rec.SchemaVersion), 10)
	enc.member(",", "request_id", rec.RequestID)
	enc.optional("generation", rec.Generation)
	enc.optional("tenant", rec.Tenant)
	enc.optional("request", rec.Request)
	enc.buf = append(enc.buf, `,"metadata":`...)
	if err := enc.object(rec.Metadata); err != nil {
		return err
	}
	enc.member(",", "status", string(rec.Status))
	enc.optional("lifecycle", string(rec.Lifecycle))
	enc.optional("cause", string(rec.Cause))
	if rec.OpenUntil != nil {
		enc.buf = append(enc.buf, `,"open_until":`...)
		if err := enc.time(*rec.OpenUntil); err != nil {
			return err
		}
	}
	enc.optional("error", rec.Error)
	enc.buf = append(enc.buf, `,"pipeline_hooks":`...)
	if err := array(enc, rec.PipelineHooks, enc.invocation); err != nil {
		return err
	}
	if err := optionalArray(enc, "phases", rec.Phases, viewOf(enc, phaseViews)); err != nil {
		return err
	}
	if err := optionalArray(enc, "rejections", rec.Rejections, viewOf(enc, rejectionViews)); err != nil {
		return err
	}
	if rec.Result != nil {
		enc.buf = append(enc.buf, `,"result":`...)
		if err := enc.view(resultViews.View(rec.Result)); err != nil {
			return err
		}
	}
	if err := optionalArray(enc, "operations", rec.Operations, viewOf(enc, operationViews)); err != nil {
		return err
	}
	enc.optional("final_response", rec.FinalResponse)
	enc.optional("final_response_source", rec.FinalResponseSource)
	enc.buf = strconv.AppendInt(append(enc.buf, `,"revision":`...), rec.Revision, 10)
	enc.buf = append(enc.buf, `,"created_at":`...)
	if err := enc.time(rec.CreatedAt); err != nil {
		return err
	}
	enc.buf = append(enc.buf, `,"updated_at":`...)
	if err := enc.time(rec.UpdatedAt); err != nil {
		return err
	}
	enc.buf = append(enc.buf, '}')
	return nil
}

// state writes st member by member as encoding/json does, its parts through their
// Views. TestAppendJSON_EveryFieldSet fails when a field is added to RequestState that
// it does not write.
func (enc *jsonEncoder) state(st *RequestState) error {
	if st == nil {
		enc.buf = append(enc.buf, "null"...)
		return nil
	}
	enc.member("{", "id", st.ID)
	enc.member(",", "generation", st.Generation)
	enc.member(",", "request", st.Request)
	for _, m := range [...]struct {
		name string
		m    map[string]any
	}{{"metadata", st.Metadata}, {"enrichments", st.Enrichments}} {
		if len(m.m) > 0 {
			enc.buf = append(append(append(enc.buf, `,"`...), m.name...), '"', ':')
			if err := enc.object(m.m); err != nil {
				return err
			}
		}
	}
	if len(st.CacheVary) > 0 {
		enc.buf = append(enc.buf, `,"cache_vary":`...)
		_ = sortedMap(enc, st.CacheVary, func(v string) error { enc.string(v); return nil })
	}
	enc.flag("cache_read_disabled", st.CacheReadDisabled)
	enc.flag("phases_independent", st.PhasesIndependent)
	enc.flag("invalid_plan_fails", st.InvalidPlanFails)
	enc.optional("lifecycle", string(st.Lifecycle))
	enc.buf = append(enc.buf, `,"opened_at":`...)
	if err := enc.time(st.OpenedAt); err != nil {
		return err
	}
	if err := optionalArray(enc, "prior_steps", st.PriorSteps, viewOf(enc, stepViews)); err != nil {
		return err
	}
	enc.count("phase", st.Phase)
	enc.optional("phase_plan_id", st.PhasePlanID)
	enc.optional("phase_hash", st.PhaseHash)
	enc.count("phase_start", st.PhaseStart)
	if len(st.Runs) > 0 {
		enc.buf = append(enc.buf, `,"runs":`...)
		if err := enc.runs(st.Runs); err != nil {
			return err
		}
	}
	if len(st.Labels) > 0 {
		enc.buf = append(enc.buf, `,"labels":`...)
		enc.strings(st.Labels)
	}
	if err := optionalArray(enc, "history", st.History, viewOf(enc, historyViews)); err != nil {
		return err
	}
	enc.count("reported", st.Reported)
	if err := optionalArray(enc, "phase_flows", st.PhaseFlows, viewOf(enc, flowViews)); err != nil {
		return err
	}
	if len(st.Held) > 0 {
		enc.buf = append(enc.buf, `,"held":`...)
		enc.strings(st.Held)
	}
	enc.optional("hold_of", st.HoldOf)
	enc.buf = strconv.AppendInt(append(enc.buf, `,"revision":`...), st.Revision, 10)
	enc.optional("traceparent", st.TraceParent)
	enc.buf = append(enc.buf, '}')
	return nil
}

// runs writes a state's step runs with their keys sorted, as encoding/json does.
func (enc *jsonEncoder) runs(runs map[string]*StepRun) error {
	return sortedMap(enc, runs, func(r *StepRun) error { return enc.view(runViews.View(r)) })
}

// sortedMap writes m with its keys sorted, as encoding/json does, elem writing each
// value; a nil map is null.
func sortedMap[V any](enc *jsonEncoder, m map[string]V, elem func(V) error) error {
	if m == nil {
		enc.buf = append(enc.buf, "null"...)
		return nil
	}
	enc.buf = append(enc.buf, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			enc.buf = append(enc.buf, ',')
		}
		enc.string(k)
		enc.buf = append(enc.buf, ':')
		if err := elem(m[k]); err != nil {
			return err
		}
	}
	enc.buf = append(enc.buf, '}')
	return nil
}

// optionalArray writes the member name: xs after a comma unless xs is empty
// (omitempty), elem writing each element.
func optionalArray[T any](enc *jsonEncoder, name string, xs []T, elem func(*T) error) error {
	if len(xs) == 0 {
		return nil
	}
	enc.buf = append(append(append(enc.buf, `,"`...), name...), '"', ':')
	return array(enc, xs, elem)
}

// flag writes the member name: true after a comma when set (omitempty).
func (enc *jsonEncoder) flag(name string, set bool) {
	if set {
		enc.buf = append(append(append(enc.buf, `,"`...), name...), `":true`...)
	}
}

// count writes the member name: n after a comma unless n is 0 (omitempty).
func (enc *jsonEncoder) count(name string, n int) {
	if n != 0 {
		enc.buf = strconv.AppendInt(append(append(append(enc.buf, `,"`...), name...), '"', ':'), int64(n), 10)
	}
}

// member writes sep, then the member name: value (a string).
func (enc *jsonEncoder) member(sep, name, value string) {
	enc.buf = append(append(append(enc.buf, sep...), '"'), name...)
	enc.buf = append(enc.buf, '"', ':')
	enc.string(value)
}

// optional writes the member name: value after a comma unless value is empty
// (omitempty).
func (enc *jsonEncoder) optional(name, value string) {
	if value != "" {
		enc.member(",", name, value)
	}
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
		enc.string(s)
	}
	enc.buf = append(enc.buf, ']')
}

func (enc *jsonEncoder) string(s string) { enc.buf = appendString(enc.buf, s, !enc.noHTML) }

// marshal writes v with encoding/json.
func (enc *jsonEncoder) marshal(v any) error {
	if !enc.noHTML {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		enc.buf = append(enc.buf, data...)
		return nil
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return err
	}
	enc.buf = append(enc.buf, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
	return nil
}

func (enc *jsonEncoder) time(t time.Time) (err error) {
	enc.buf, err = AppendJSONTime(enc.buf, t)
	return err
}

// AppendJSONTime appends t as time.Time.MarshalJSON writes it, refusing what it refuses
// (a year that is not four digits wide, a zone offset of 24 hours or more): then dst
// is returned as it was, with an error.
func AppendJSONTime(dst []byte, t time.Time) ([]byte, error) {
	b := append(dst, '"')
	start := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	if b[start+len("9999")] != '-' {
		return dst, fmt.Errorf("json: time %v: year outside of range [0,9999]", t)
	}
	if b[len(b)-1] != 'Z' {
		c, hh := b[len(b)-len("Z07:00")], b[len(b)-len("07:00"):]
		if '0' <= c && c <= '9' || 10*(hh[0]-'0')+hh[1]-'0' >= 24 {
			return dst, fmt.Errorf("json: time %v: timezone hour outside of range [0,23]", t)
		}
	}
	return append(b, '"'), nil
}

func (enc *jsonEncoder) float(f float64) (err error) {
	enc.buf, err = AppendJSONFloat(enc.buf, f)
	return err
}

// AppendJSONFloat appends f as encoding/json writes a float64: like ES6's number to
// string conversion. NaN and infinities have no encoding: dst is returned as it was,
// with an error.
func AppendJSONFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, fmt.Errorf("json: unsupported value: %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// plainJSON and plainHTML say which bytes appendString copies as they are (without and
// with HTML escaping): ASCII but control characters, '"', '\\' and, for plainHTML,
// '<', '>' and '&'.
var plainJSON, plainHTML = plainBytes(""), plainBytes("<>&")

func plainBytes(escaped string) (plain [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		plain[b] = b != '"' && b != '\\' && !strings.ContainsRune(escaped, rune(b))
	}
	return plain
}

// plainWords returns how many bytes of s, from i, are plain (plainHTML when html,
// else plainJSON) in whole 8-byte words: it tests 8 bytes at once, as a byte below 0x20
// or from 0x80, or equal to an escaped character, sets the high bit of its lane in
// mask (the usual has-less and has-zero tests, exact for the question whether any lane
// is set).
func plainWords(s string, i int, html bool) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		q, bs := x^'"'*ones, x^'\\'*ones
		mask := x | (x-0x20*ones)&^x | (q-ones)&^q | (bs-ones)&^bs
		if html {
			lt, gt, amp := x^'<'*ones, x^'>'*ones, x^'&'*ones
			mask |= (lt-ones)&^lt | (gt-ones)&^gt | (amp-ones)&^amp
		}
		if mask&highs != 0 {
			break
		}
	}
	return i
}

// AppendJSONString appends s quoted as encoding/json quotes it: HTML characters, U+2028
// and U+2029 escaped, invalid UTF-8 as U+FFFD.
func AppendJSONString(dst []byte, s string) []byte { return appendString(dst, s, true) }

// AppendJSONStringUnescapedHTML is AppendJSONString with <, > and & as they are, as an
// encoding/json.Encoder with SetEscapeHTML(false) writes them.
func AppendJSONStringUnescapedHTML(dst []byte, s string) []byte { return appendString(dst, s, false) }

// appendString is AppendJSONString, with HTML characters as they are unless html.
func appendString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	plain := &plainJSON
	if html {
		plain = &plainHTML
	}
	start := 0
	for i := plainWords(s, 0, html); i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if plain[b] {
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
			start = i + 1
			i = plainWords(s, start, html)
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
		start = i + size
		i = plainWords(s, start, html)
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
