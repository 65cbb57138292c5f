package op

import (
	"maps"
	"slices"
)

// Clone returns a copy of c that shares no mutable memory with it for the JSON-shaped
// values parameters, metadata and step hold: map[string]any, []any, []map[string]any,
// map[string]string, []string, []byte, []int, []float64 are copied recursively; strings,
// numbers, booleans and nil are immutable. Values of any other type are shared, as is
// anything nested deeper than Validate allows. A call without parameters or metadata
// is copied without allocating.
func (c Call) Clone() Call {
	c.Parameters = cloneMap(c.Parameters, 1)
	c.Metadata = cloneMap(c.Metadata, 1)
	c.Step = cloneMap(c.Step, 1)
	c.Labels = slices.Clone(c.Labels)
	return c
}

func cloneMap(m map[string]any, depth int) map[string]any {
	if m == nil || depth > MaxDepth {
		return m
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v, depth+1)
	}
	return out
}

func cloneValue(v any, depth int) any {
	switch t := v.(type) {
	case map[string]any:
		return cloneMap(t, depth)
	case []any:
		if t == nil || depth > MaxDepth {
			return t
		}
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = cloneValue(e, depth+1)
		}
		return out
	case []map[string]any:
		if t == nil || depth > MaxDepth {
			return t
		}
		out := make([]map[string]any, len(t))
		for i, m := range t {
			out[i] = cloneMap(m, depth+1)
		}
		return out
	case map[string]string:
		return maps.Clone(t)
	case []string:
		return slices.Clone(t)
	case []byte:
		return slices.Clone(t)
	case []int:
		return slices.Clone(t)
	case []float64:
		return slices.Clone(t)
	}
	return v
}
