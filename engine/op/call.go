package op

import (
	"strconv"
	"unicode/utf8"
)

// Operation names a unit of work the runtime performs and observers can wrap.
type Operation string

// Guardable operations: around observers and guards may register for them.
const (
	Turn      Operation = "turn"
	Inference Operation = "inference"
	ToolCall  Operation = "tool_call"
)

// Observe-only operations: around observers may register for them, guards may not.
const (
	Planning  Operation = "planning"
	Synthesis Operation = "synthesis"
)

// numOperations is the size of the Runner's per-operation table.
const numOperations = 5

// index maps an operation to its slot in the Runner's table, or -1 if unknown.
func (o Operation) index() int {
	switch o {
	case Turn:
		return 0
	case Inference:
		return 1
	case ToolCall:
		return 2
	case Planning:
		return 3
	case Synthesis:
		return 4
	}
	return -1
}

// Known reports whether o is one of the operations declared by this package.
func (o Operation) Known() bool { return o.index() >= 0 }

// Guardable reports whether guards may register for o.
func (o Operation) Guardable() bool { return o == Turn || o == Inference || o == ToolCall }

// Call identifies one operation. The runtime owns it: every callback receives its own
// copy (see Clone), so a callback may keep or modify its copy without affecting others.
type Call struct {
	Operation  Operation      `json:"operation"`
	RequestID  string         `json:"request_id"`
	StepID     string         `json:"step_id,omitempty"`
	Namespace  string         `json:"namespace,omitempty"`
	AgentName  string         `json:"agent_name,omitempty"`
	Capability string         `json:"capability,omitempty"`
	Parameters map[string]any `json:"parameters,omitempty"`
	Model      string         `json:"model,omitempty"`
	Phase      int            `json:"phase,omitempty"`
	Request    string         `json:"request,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	// Step is the accepted plan step a tool_call is bound to, as JSON-shaped values
	// (set by plan binding, never taken from a client): guards compare it with the
	// call as call.step (CEL) and input.step (Rego).
	Step map[string]any `json:"-"`
	// Labels are the labels flowing into a tool_call through the {{step-N…}}
	// references of its step (call.labels in CEL, input.call.labels in Rego), set by
	// the engine like Step; Flow is what the call knows of its request's labels and
	// history (labels and history in CEL, input.labels and input.history in Rego).
	Labels []string `json:"-"`
	Flow   *Flow    `json:"-"`
}

// CallError reports a Call that Validate rejects. Field is the JSON name of the
// offending field, with a dotted path into parameters or metadata where relevant.
type CallError struct {
	Field  string
	Reason string
}

func (e *CallError) Error() string {
	return "op: invalid call: " + e.Field + ": " + e.Reason
}

// MaxDepth bounds the nesting of parameters and metadata; it also stops Validate and
// Clone from recursing forever on a map or list that contains itself.
const MaxDepth = 32

var reasonDepth = "nested deeper than " + strconv.Itoa(MaxDepth) + " levels"

// Validate checks the call's identity fields. The first failure is returned as a
// *CallError: an unknown operation, an empty request_id, a tool_call without step_id,
// agent_name or capability, an inference without model, a negative phase, a string
// (including keys and values nested in parameters or metadata) that is not valid UTF-8,
// or maps and lists in parameters or metadata nested deeper than MaxDepth levels.
func (c Call) Validate() error {
	if !c.Operation.Known() {
		return &CallError{Field: "operation", Reason: "unknown operation " + strconv.Quote(string(c.Operation))}
	}
	if c.RequestID == "" {
		return &CallError{Field: "request_id", Reason: "required"}
	}
	switch c.Operation {
	case ToolCall:
		for _, f := range [...]struct{ name, value string }{
			{"step_id", c.StepID}, {"agent_name", c.AgentName}, {"capability", c.Capability},
		} {
			if f.value == "" {
				return &CallError{Field: f.name, Reason: "required for tool_call"}
			}
		}
	case Inference:
		if c.Model == "" {
			return &CallError{Field: "model", Reason: "required for inference"}
		}
	}
	if c.Phase < 0 {
		return &CallError{Field: "phase", Reason: "must not be negative"}
	}
	for _, f := range [...]struct{ name, value string }{
		{"request_id", c.RequestID}, {"step_id", c.StepID}, {"namespace", c.Namespace},
		{"agent_name", c.AgentName}, {"capability", c.Capability}, {"model", c.Model},
		{"request", c.Request},
	} {
		if !utf8.ValidString(f.value) {
			return &CallError{Field: f.name, Reason: reasonUTF8}
		}
	}
	if where, reason := checkMap(c.Parameters, 1); reason != "" {
		return &CallError{Field: "parameters" + where, Reason: reason}
	}
	if where, reason := checkMap(c.Metadata, 1); reason != "" {
		return &CallError{Field: "metadata" + where, Reason: reason}
	}
	return nil
}

const reasonUTF8 = "not valid UTF-8"

// checkValue walks a parameters/metadata value at nesting level depth. On failure it
// returns the path below v (".key" or "[i]" segments, built only on the failing branch)
// and a reason.
func checkValue(v any, depth int) (where, reason string) {
	switch t := v.(type) {
	case string:
		if !utf8.ValidString(t) {
			return "", reasonUTF8
		}
	case map[string]any:
		return checkMap(t, depth)
	case []any:
		if depth > MaxDepth {
			return "", reasonDepth
		}
		for i, e := range t {
			if w, r := checkValue(e, depth+1); r != "" {
				return "[" + strconv.Itoa(i) + "]" + w, r
			}
		}
	case []map[string]any:
		for i, m := range t {
			if w, r := checkMap(m, depth+1); r != "" {
				return "[" + strconv.Itoa(i) + "]" + w, r
			}
		}
	case map[string]string:
		for k, s := range t {
			if !utf8.ValidString(k) {
				return "", "key " + reasonUTF8
			}
			if !utf8.ValidString(s) {
				return "." + k, reasonUTF8
			}
		}
	case []string:
		for i, s := range t {
			if !utf8.ValidString(s) {
				return "[" + strconv.Itoa(i) + "]", reasonUTF8
			}
		}
	}
	return "", ""
}

func checkMap(m map[string]any, depth int) (where, reason string) {
	if len(m) == 0 {
		return "", ""
	}
	if depth > MaxDepth {
		return "", reasonDepth
	}
	for k, v := range m {
		if !utf8.ValidString(k) {
			return "", "key " + reasonUTF8
		}
		if w, r := checkValue(v, depth+1); r != "" {
			return "." + k + w, r
		}
	}
	return "", ""
}
