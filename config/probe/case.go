package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentd-dev/agentd/engine"
)

// Case is one plan to review with the request it belongs to. Plan is the plan's wire
// form: a JSON value as the after_planning endpoint receives it.
type Case struct {
	// Source says where the seed came from: "catalog ns/agent/capability",
	// "tests/FILE:LINE" or "requests/FILE".
	Source string
	// Mutation names the mutation applied to the seed ("" for the seed itself) and
	// Detail the variant.
	Mutation string
	Detail   string
	Request  string
	Metadata map[string]any
	// Enrichments are the request's enrichments as after_planning sees them.
	Enrichments map[string]any
	// Prior are the steps of the request's completed earlier phases.
	Prior []engine.RoutingStep
	// Labels and History are the flow the request starts from (docs/semantics.md
	// §8.21): a test's given.labels and given.history, or a label set the probe tries.
	Labels  []string
	History []engine.HistoryStep
	Plan    any
	// Context names the request metadata and flow of the seed the case was made from
	// (see contextOf, flowContext): what that metadata was allowed is what a
	// request_metadata mutation of it may get, and what that flow was allowed is what
	// any mutation of a seed with a flow may get.
	Context string
	// plain is, for a seed repeated under a label set, 1 + the index of the seed it
	// repeats (see labelled).
	plain int
}

// contextOf names request metadata: its JSON encoding, keys sorted ("{}" for none).
func contextOf(metadata map[string]any) string {
	if len(metadata) == 0 {
		return "{}"
	}
	data, err := json.Marshal(metadata)
	if err != nil {
		panic(fmt.Sprintf("probe: request metadata does not encode: %v", err))
	}
	return string(data)
}

// with returns a deep copy of c named by mutation and detail.
func (c *Case) with(mutation, detail string) Case {
	out := *c
	out.Mutation, out.Detail = mutation, detail
	out.Metadata = cloneMap(c.Metadata)
	out.Enrichments = cloneMap(c.Enrichments)
	out.Plan = cloneJSON(c.Plan)
	out.Prior = slices.Clone(c.Prior)
	out.Labels, out.History = slices.Clone(c.Labels), slices.Clone(c.History)
	return out
}

// steps returns the plan's steps when the plan is an object whose steps are an array
// of objects.
func (c *Case) steps() []map[string]any {
	plan, _ := c.Plan.(map[string]any)
	list, _ := plan["steps"].([]any)
	var out []map[string]any
	for _, s := range list {
		if m, ok := s.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// plan returns the plan object (nil when the plan is not an object).
func (c *Case) plan() map[string]any {
	p, _ := c.Plan.(map[string]any)
	return p
}

// wire renders a Go value as its JSON value, numbers as json.Number.
func wire(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("probe: %T does not encode: %v", v, err))
	}
	return decodeJSON(data)
}

func decodeJSON(data []byte) any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		panic(fmt.Sprintf("probe: JSON does not decode: %v", err))
	}
	return out
}

// cloneMap deep-copies a JSON object; nil stays nil.
func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return cloneJSON(m).(map[string]any)
}

// cloneJSON deep-copies a JSON value.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneJSON(e)
		}
		return out
	default:
		return x
	}
}

// decodePlan decodes a wire plan as the API does: unknown members are an error.
func decodePlan(plan any) (*engine.RoutingPlan, error) {
	data, err := json.Marshal(plan)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p *engine.RoutingPlan
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("plan is null")
	}
	return p, nil
}

// identity names a step's operation: namespace/agent_name/capability. A part that is
// not plain ASCII is quoted, so a homoglyph or a space shows; a capability that is
// absent or not a string is named by its JSON value.
func identity(s engine.RoutingStep) string {
	capability := "<no capability>"
	switch c, ok := s.Metadata["capability"]; {
	case !ok:
	case c == nil:
		capability = "<capability null>"
	default:
		if str, isStr := c.(string); isStr {
			capability = part(str)
		} else {
			b, _ := json.Marshal(c)
			capability = "<capability " + string(b) + ">"
		}
	}
	return part(s.Namespace) + "/" + part(s.AgentName) + "/" + capability
}

func part(s string) string {
	plain := s != ""
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) || r == ' ' || r == '/' || r == '"' {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return strconv.QuoteToASCII(s)
}

// identities returns the distinct identities of plan's steps, in step order.
func identities(plan *engine.RoutingPlan) []string {
	var out []string
	for _, s := range plan.Steps {
		if id := identity(s); !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// compactJSON renders v as one line of JSON with sorted keys.
func compactJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
