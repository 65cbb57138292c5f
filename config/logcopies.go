package config

import (
	"slices"
	"strconv"
	"strings"
)

// A decision event's payload holds some values more than once: the request's text is
// also each plan's original_request, the plan under review is also the accepted plan,
// and a step is in the plan, the accepted plan, the prior steps, the result's steps
// and the call a check reviews. A mask names one place; its copies are the places
// that hold the same value, so that what a mask hides shows nowhere in the event.
//
// The rule, as the README's "Decision log rules" states it:
//
//   - request is copied as plan.original_request and accepted_plan.original_request;
//   - a member of plan other than its steps is copied as the same member of
//     accepted_plan, and the other way round;
//   - a step is held in plan.steps, accepted_plan.steps and prior_steps (plan form:
//     step_id, agent_name, namespace, metadata.capability, metadata.parameters, ...),
//     result.steps and call (executed form: the same members, with capability and
//     parameters at the top). A mask on a member of a step masks that member in every
//     copy of the step: a plan step's metadata.parameters.X is an executed step's and
//     a call's parameters.X, metadata.capability their capability; members only one
//     form has (instruction, response, operation) have no copy. A whole step's copies
//     are its five copied members in the other form.
//   - steps are selected as the mask selects them: "*" (or no selector) is every step,
//     in every copy and so in every event; an index selects, in the other fields, the
//     steps with the step_id of the step it selects in the field it names, in the same
//     event (in an event without that field it selects nothing). A call is every
//     step's call.
//
// Values are matched by place, not by value: free text (a request that quotes a
// parameter, a policy's violation message) is not searched.

// stepField is a payload field that holds steps: a list of them at prefix, or (call)
// one step's members at prefix itself. An executed step (result steps, call) has
// capability and parameters at its top, a plan step under its metadata.
type stepField struct {
	prefix   []string
	executed bool
	list     bool
}

var stepFields = []stepField{
	{prefix: []string{"plan", "steps"}, list: true},
	{prefix: []string{"accepted_plan", "steps"}, list: true},
	{prefix: []string{"prior_steps"}, list: true},
	{prefix: []string{"result", "steps"}, executed: true, list: true},
	{prefix: []string{"call"}, executed: true},
}

// logCopy is one place holding a copy of what a mask path names: a path to apply as
// it is (segs), or a step member (member) in field, of the steps whose step_id is
// that of the step at index in from (every step when index is "").
type logCopy struct {
	segs   []string
	field  *stepField
	member []string
	from   *stepField
	index  string
}

// copiesOf returns the copies of what the mask path segs names, each once, none the
// path itself.
func copiesOf(segs []string) []logCopy {
	var out []logCopy
	seen := map[string]bool{strings.Join(segs, "."): true}
	add := func(c logCopy) {
		key := c.key()
		if !seen[key] {
			seen[key] = true
			out = append(out, c)
		}
	}
	for _, c := range planCopies(segs) {
		add(c)
	}
	for _, sp := range stepPaths(segs) {
		for _, c := range sp.copies() {
			add(c)
		}
	}
	return out
}

func (c logCopy) key() string {
	if c.field == nil {
		return strings.Join(c.segs, ".")
	}
	from := ""
	if c.from != nil {
		from = strings.Join(c.from.prefix, ".") + "#" + c.index
	}
	return strings.Join(c.field.prefix, ".") + "|" + strings.Join(c.member, ".") + "|" + from
}

// planCopies are the copies of request and of plan members other than the steps.
func planCopies(segs []string) []logCopy {
	twin := map[string]string{"plan": "accepted_plan", "accepted_plan": "plan"}[segs[0]]
	switch {
	case segs[0] == "request" && len(segs) == 1:
		return []logCopy{{segs: []string{"plan", "original_request"}}, {segs: []string{"accepted_plan", "original_request"}}}
	case twin == "":
		return nil
	case len(segs) > 1 && segs[1] == "steps":
		return nil // steps are copied by step_id (stepPaths)
	}
	out := []logCopy{{segs: append([]string{twin}, segs[1:]...)}}
	if len(segs) == 1 || len(segs) == 2 && (segs[1] == "original_request" || segs[1] == wildcard) {
		out = append(out, logCopy{segs: []string{"request"}})
	}
	return out
}

// stepPath is a mask path read as naming member of the steps sel selects in field.
type stepPath struct {
	field  *stepField
	sel    string
	member []string
}

// stepPaths reads segs as step paths: none when it names no step, more than one when
// a wildcard or a whole field stands for the steps among other members.
func stepPaths(segs []string) []stepPath {
	field := func(prefix ...string) *stepField {
		for i := range stepFields {
			if slices.Equal(stepFields[i].prefix, prefix) {
				return &stepFields[i]
			}
		}
		panic("config: no step field " + strings.Join(prefix, "."))
	}
	inList := func(f *stepField, rest []string) stepPath {
		if len(rest) == 0 {
			return stepPath{field: f, sel: wildcard}
		}
		return stepPath{field: f, sel: rest[0], member: rest[1:]}
	}
	switch segs[0] {
	case "plan", "accepted_plan", "result":
		if len(segs) == 1 || segs[1] == "steps" || segs[1] == wildcard {
			return []stepPath{inList(field(segs[0], "steps"), segs[min(2, len(segs)):])}
		}
	case "prior_steps":
		return []stepPath{inList(field("prior_steps"), segs[1:])}
	case "call":
		return []stepPath{{field: field("call"), sel: wildcard, member: segs[1:]}}
	}
	return nil
}

// copies are the places in the other step fields holding what p names.
func (p stepPath) copies() []logCopy {
	planForm := [][]string{p.member}
	if p.field.executed {
		planForm = toPlanStep(p.member)
	}
	var executedForm [][]string
	for _, m := range planForm {
		executedForm = append(executedForm, toExecutedStep(m)...)
	}
	var out []logCopy
	for i := range stepFields {
		g := &stepFields[i]
		if g == p.field {
			continue
		}
		members := planForm
		if g.executed {
			members = executedForm
		}
		for _, m := range members {
			c := logCopy{field: g, member: m}
			if p.sel != wildcard {
				c.from, c.index = p.field, p.sel
			}
			out = append(out, c)
		}
	}
	return out
}

// copiedMembers are the members an executed step copies from its plan step, in
// executed form.
var copiedMembers = []string{"step_id", "agent_name", "namespace", "capability", "parameters"}

// toExecutedStep returns the executed-form members that copy plan-form member m.
func toExecutedStep(m []string) [][]string {
	if len(m) == 0 {
		return prefixEach(copiedMembers, nil)
	}
	switch m[0] {
	case "step_id", "agent_name", "namespace":
		return [][]string{m}
	case "metadata":
		switch {
		case len(m) == 1:
			return prefixEach([]string{"capability", "parameters"}, nil)
		case m[1] == "capability" || m[1] == "parameters":
			return [][]string{m[1:]}
		case m[1] == wildcard:
			return prefixEach([]string{"capability", "parameters"}, m[2:])
		}
	case wildcard:
		var out [][]string
		for _, k := range []string{"step_id", "agent_name", "namespace", "metadata"} {
			out = append(out, toExecutedStep(append([]string{k}, m[1:]...))...)
		}
		return out
	}
	return nil
}

// toPlanStep returns the plan-form members that executed-form member m copies.
func toPlanStep(m []string) [][]string {
	if len(m) == 0 {
		m = []string{wildcard}
	}
	switch m[0] {
	case "step_id", "agent_name", "namespace":
		return [][]string{m}
	case "capability", "parameters":
		return [][]string{append([]string{"metadata"}, m...)}
	case wildcard:
		var out [][]string
		for _, k := range copiedMembers {
			out = append(out, toPlanStep(append([]string{k}, m[1:]...))...)
		}
		return out
	}
	return nil
}

// prefixEach returns [k, rest...] for each k of keys.
func prefixEach(keys, rest []string) [][]string {
	out := make([][]string, len(keys))
	for i, k := range keys {
		out[i] = append([]string{k}, rest...)
	}
	return out
}

// paths returns the concrete paths c names in payload (the event's unmasked payload):
// its segs, or its member in every step of its field, or in the steps whose step_id
// is that of the step at c.index of c.from.
func (c logCopy) paths(payload *shapedPayload) [][]string {
	if c.field == nil {
		return [][]string{c.segs}
	}
	if c.from == nil {
		if c.field.list {
			return [][]string{join(c.field.prefix, []string{wildcard}, c.member)}
		}
		return [][]string{join(c.field.prefix, c.member)}
	}
	id, ok := payload.stepID(c.from, c.index)
	if !ok {
		return nil
	}
	if !c.field.list {
		if callID, _ := payload.lookup(join(c.field.prefix, []string{"step_id"})); callID == id {
			return [][]string{join(c.field.prefix, c.member)}
		}
		return nil
	}
	list, _ := payload.lookup(c.field.prefix)
	steps, _ := list.([]any)
	var out [][]string
	for i, s := range steps {
		if step, _ := s.(map[string]any); step != nil && step["step_id"] == id {
			out = append(out, join(c.field.prefix, []string{strconv.Itoa(i)}, c.member))
		}
	}
	return out
}

func join(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// shapedPayload is an unmasked payload whose top-level values are read in their JSON
// form, each converted once, when first read.
type shapedPayload struct {
	raw    map[string]any
	shaped map[string]any
}

// lookup returns the value at segs, keys and list indexes.
func (p *shapedPayload) lookup(segs []string) (any, bool) {
	if p.shaped == nil {
		p.shaped = map[string]any{}
	}
	v, ok := p.shaped[segs[0]]
	if !ok {
		if v, ok = jsonShaped(p.raw[segs[0]]); !ok {
			return nil, false
		}
		p.shaped[segs[0]] = v
	}
	for _, s := range segs[1:] {
		switch t := v.(type) {
		case map[string]any:
			v, ok = t[s]
		case []any:
			i, err := strconv.Atoi(s)
			ok = err == nil && i >= 0 && i < len(t)
			if ok {
				v = t[i]
			}
		default:
			ok = false
		}
		if !ok {
			return nil, false
		}
	}
	return v, true
}

// stepID returns the step_id of the step at index of field f.
func (p *shapedPayload) stepID(f *stepField, index string) (string, bool) {
	v, _ := p.lookup(join(f.prefix, []string{index, "step_id"}))
	id, ok := v.(string)
	return id, ok
}
