package policy

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

// canon writes an unambiguous encoding of plan-review input values: every value is a
// type tag followed by its content, strings and containers carry their lengths, and
// object keys are sorted. Equal encodings mean equal Rego inputs, so a strong hash of
// the encoding can key decisions. It avoids encoding/json's reflection: building a memo
// key must cost far less than the evaluation it saves.
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
	tagAbsent
)

func (c *canon) tag(t byte) { c.buf = append(c.buf, t) }

func (c *canon) length(n int) { c.buf = binary.AppendUvarint(c.buf, uint64(n)) }

func (c *canon) str(s string) {
	c.tag(tagString)
	c.length(len(s))
	c.buf = append(c.buf, s...)
}

// number writes n in the shortest form that round-trips, as Rego sees JSON numbers.
func (c *canon) number(f float64) {
	c.tag(tagNumber)
	c.buf = strconv.AppendFloat(c.buf, f, 'g', -1, 64)
	c.buf = append(c.buf, 0)
}

func (c *canon) int(n int64) {
	c.tag(tagNumber)
	c.buf = strconv.AppendInt(c.buf, n, 10)
	c.buf = append(c.buf, 0)
}

// field writes an object member: key then value.
func (c *canon) field(key string) { c.str(key) }

// optional writes member key with text s.
func (c *canon) optional(key, s string) {
	c.field(key)
	c.text(s)
}

func (c *canon) strings(key string, ss []string) {
	c.field(key)
	if len(ss) == 0 {
		c.tag(tagAbsent)
		return
	}
	c.tag(tagArray)
	c.length(len(ss))
	for _, s := range ss {
		c.str(s)
	}
}

// value writes a JSON-shaped value. Anything else is written as its JSON encoding
// (rare: only values a Go caller put in a map).
func (c *canon) value(v any) error {
	switch t := v.(type) {
	case nil:
		c.tag(tagNull)
	case bool:
		if t {
			c.tag(tagTrue)
		} else {
			c.tag(tagFalse)
		}
	case string:
		c.str(t)
	case float64:
		if math.Trunc(t) == t && math.Abs(t) < 1<<53 && !(t == 0 && math.Signbit(t)) {
			c.int(int64(t))
		} else {
			c.number(t)
		}
	case int:
		c.int(int64(t))
	case int64:
		c.int(t)
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return c.value(f)
		}
		c.str(string(t))
	case []any:
		c.tag(tagArray)
		c.length(len(t))
		for _, e := range t {
			if err := c.value(e); err != nil {
				return err
			}
		}
	case map[string]any:
		return c.object(t)
	case []string:
		c.tag(tagArray)
		c.length(len(t))
		for _, s := range t {
			c.str(s)
		}
	default:
		data, err := json.Marshal(t)
		if err != nil {
			return err
		}
		var decoded any
		if err := json.Unmarshal(data, &decoded); err != nil {
			return err
		}
		return c.value(decoded)
	}
	return nil
}

func (c *canon) object(m map[string]any) error {
	if m == nil {
		c.tag(tagNull)
		return nil
	}
	c.tag(tagObject)
	c.length(len(m))
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c.field(k)
		if err := c.value(m[k]); err != nil {
			return err
		}
	}
	return nil
}

// planFields are the members of a RoutingPlan as PlanInput presents them to Rego.
var planFields = []string{"plan_id", "original_request", "mode", "created_at", "terminal",
	"continuation_note", "phase_number", "needs_user_input", "steps"}

// plan writes a RoutingPlan member by member.
func (c *canon) plan(p *engine.RoutingPlan) error {
	if p == nil {
		c.tag(tagNull)
		return nil
	}
	c.tag(tagObject)
	for _, f := range planFields {
		c.field(f)
		if err := c.planField(p, f); err != nil {
			return err
		}
	}
	return nil
}

// planField writes member f of p (absent for a name RoutingPlan does not have, as Rego
// would find nothing there).
func (c *canon) planField(p *engine.RoutingPlan, f string) error {
	if p == nil {
		c.tag(tagAbsent)
		return nil
	}
	switch f {
	case "plan_id":
		c.text(p.PlanID)
	case "original_request":
		c.text(p.OriginalRequest)
	case "mode":
		c.text(string(p.Mode))
	case "created_at":
		c.str(p.CreatedAt.Format(time.RFC3339Nano))
	case "terminal":
		switch {
		case p.Terminal == nil:
			c.tag(tagAbsent)
		case *p.Terminal:
			c.tag(tagTrue)
		default:
			c.tag(tagFalse)
		}
	case "continuation_note":
		c.text(p.ContinuationNote)
	case "phase_number":
		c.int(int64(p.PhaseNumber))
	case "needs_user_input":
		if n := p.NeedsUserInput; n == nil {
			c.tag(tagAbsent)
		} else {
			c.tag(tagObject)
			c.optional("question", n.Question)
			c.strings("missing_fields", n.MissingFields)
			c.optional("partial_progress", n.PartialProgress)
		}
	case "steps":
		return c.steps(p.Steps)
	default:
		c.tag(tagAbsent)
	}
	return nil
}

// text writes s, or tagAbsent when empty (omitempty members are absent in the input).
func (c *canon) text(s string) {
	if s == "" {
		c.tag(tagAbsent)
		return
	}
	c.str(s)
}

func (c *canon) steps(steps []engine.RoutingStep) error {
	c.tag(tagArray)
	c.length(len(steps))
	for i := range steps {
		s := &steps[i]
		c.tag(tagObject)
		c.optional("step_id", s.StepID)
		c.optional("agent_name", s.AgentName)
		c.optional("namespace", s.Namespace)
		c.optional("instruction", s.Instruction)
		c.strings("depends_on", s.DependsOn)
		c.strings("implicit_deps", s.ImplicitDeps)
		c.field("metadata")
		if s.Metadata == nil {
			c.tag(tagAbsent)
		} else if err := c.object(s.Metadata); err != nil {
			return err
		}
	}
	return nil
}
