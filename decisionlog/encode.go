package decisionlog

import (
	"slices"

	"github.com/agentd-dev/agentd/engine"
)

// encoder writes events as encoding/json.Marshal does, byte for byte, without
// reflection over the payload (engine.AppendJSON): the worker's main cost was
// encoding/json walking the payload maps. One encoder serves one goroutine; its
// buffer is reused.
type encoder struct {
	buf  []byte
	keys []string
	// plans remembers where each plan of the event being encoded was written, so an
	// accepted plan that is the incoming plan (a review that rewrote nothing) is copied.
	plans map[*engine.RoutingPlan][2]int
}

// encode returns e's JSON encoding in the encoder's buffer: valid until the next call.
func (enc *encoder) encode(e *Event) ([]byte, error) {
	enc.buf = enc.buf[:0]
	clear(enc.plans)
	if err := enc.event(e); err != nil {
		return nil, err
	}
	return enc.buf, nil
}

func (enc *encoder) event(e *Event) error {
	enc.buf = append(enc.buf, `{"schema_version":`...)
	if err := enc.value(e.SchemaVersion); err != nil {
		return err
	}
	enc.member("kind", e.Kind, false)
	enc.member("decision_id", e.DecisionID, true)
	enc.key("timestamp")
	var err error
	if enc.buf, err = engine.AppendJSONTime(enc.buf, e.Timestamp); err != nil {
		return err
	}
	enc.member("request_id", e.RequestID, true)
	enc.member("stage", string(e.Stage), true)
	enc.member("operation", string(e.Operation), true)
	enc.member("step_id", e.StepID, true)
	enc.member("generation", e.Generation, true)
	enc.member("policy_revision", e.PolicyRevision, true)
	enc.member("outcome", e.Outcome, false)
	if err := enc.verdict(e); err != nil {
		return err
	}
	if err := enc.float("duration_ms", e.DurationMS); err != nil {
		return err
	}
	if len(e.Input) > 0 {
		enc.key("input")
		if err := enc.payload(e.Input); err != nil {
			return err
		}
	}
	if len(e.Output) > 0 {
		enc.key("output")
		if err := enc.payload(e.Output); err != nil {
			return err
		}
	}
	enc.strings("erased", e.Erased)
	enc.strings("masked", e.Masked)
	if err := enc.optional("shadow", e.Shadow != nil, func() any { return e.Shadow }); err != nil {
		return err
	}
	enc.buf = append(enc.buf, '}')
	return nil
}

func (enc *encoder) hook(h *Hook) error {
	enc.buf = append(enc.buf, `{"hook":`...)
	enc.buf = engine.AppendJSONString(enc.buf, h.Name)
	enc.member("status", string(h.Status), false)
	enc.member("failure_policy", string(h.FailurePolicy), true)
	enc.member("action", string(h.Action), true)
	enc.member("reason", string(h.Reason), true)
	enc.member("cause", string(h.Cause), true)
	enc.member("mode", string(h.Mode), true)
	if err := enc.float("duration_ms", h.DurationMS); err != nil {
		return err
	}
	enc.buf = append(enc.buf, '}')
	return nil
}

// key writes a member's name after a preceding member.
func (enc *encoder) key(name string) { enc.buf = appendKey(enc.buf, name) }

// appendKey appends a member's name after a preceding member to b. Names are this
// package's constants, plain ASCII that JSON writes as it is.
func appendKey(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// member writes a string member after a preceding member; an omitempty one is left out
// when empty.
func (enc *encoder) member(name, value string, omitempty bool) {
	if omitempty && value == "" {
		return
	}
	enc.key(name)
	enc.buf = engine.AppendJSONString(enc.buf, value)
}

// optional writes a member when set, its value (boxed only then) as AppendJSON writes it.
func (enc *encoder) optional(name string, set bool, value func() any) error {
	if !set {
		return nil
	}
	enc.key(name)
	return enc.value(value())
}

// strings writes a member that is a list of strings, left out when empty.
func (enc *encoder) strings(name string, ss []string) {
	if len(ss) == 0 {
		return
	}
	enc.key(name)
	enc.buf = append(enc.buf, '[')
	for i, s := range ss {
		if i > 0 {
			enc.buf = append(enc.buf, ',')
		}
		enc.buf = engine.AppendJSONString(enc.buf, s)
	}
	enc.buf = append(enc.buf, ']')
}

// float writes a number member.
func (enc *encoder) float(name string, f float64) (err error) {
	enc.key(name)
	enc.buf, err = engine.AppendJSONFloat(enc.buf, f)
	return err
}

func (enc *encoder) value(v any) error {
	var err error
	enc.buf, err = engine.AppendJSON(enc.buf, v)
	return err
}

// payload writes an event's input or output, keys sorted, copying the encoding of a
// plan this event wrote already.
func (enc *encoder) payload(m map[string]any) error {
	enc.buf = append(enc.buf, '{')
	if err := enc.members(m, false); err != nil {
		return err
	}
	enc.buf = append(enc.buf, '}')
	return nil
}

// members writes the members of m as payload does, each after a comma when after is set
// (a member precedes them), else between commas.
func (enc *encoder) members(m map[string]any, after bool) error {
	enc.keys = enc.keys[:0]
	for k := range m {
		enc.keys = append(enc.keys, k)
	}
	slices.Sort(enc.keys)
	for i, k := range enc.keys {
		if i > 0 || after {
			enc.buf = append(enc.buf, ',')
		}
		enc.buf = engine.AppendJSONString(enc.buf, k)
		enc.buf = append(enc.buf, ':')
		p, isPlan := m[k].(*engine.RoutingPlan)
		if at, seen := enc.plans[p]; isPlan && p != nil && seen {
			enc.buf = append(enc.buf, enc.buf[at[0]:at[1]]...)
			continue
		}
		start := len(enc.buf)
		if err := enc.value(m[k]); err != nil {
			return err
		}
		if isPlan && p != nil {
			if enc.plans == nil {
				enc.plans = map[*engine.RoutingPlan][2]int{}
			}
			enc.plans[p] = [2]int{start, len(enc.buf)}
		}
	}
	return nil
}

// verdict writes the members that say what was decided, after a first member: the
// cause, the hooks, the violations, the denial and the would-deny findings, each when
// the event has it. Both formats write them alike.
func (enc *encoder) verdict(e *Event) error {
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
	if err := enc.optional("violations", len(e.Violations) > 0, func() any { return e.Violations }); err != nil {
		return err
	}
	if err := enc.optional("denial", e.Denial != nil, func() any { return e.Denial }); err != nil {
		return err
	}
	if err := enc.optional("would_deny", len(e.WouldDeny) > 0, func() any { return e.WouldDeny }); err != nil {
		return err
	}
	return enc.optional("approval", e.Approval != nil, func() any { return e.Approval })
}
