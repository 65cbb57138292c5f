package engine

import (
	"encoding/json"
	"fmt"
	"time"
)

// CloneError reports a plan value that cannot be deep-copied: only JSON-shaped values
// (objects, arrays, strings, numbers, booleans, null) nested at most MaxCloneDepth
// deep can be (a value that contains itself never can).
type CloneError struct {
	Path string
	Type string
}

func (e *CloneError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("cannot copy plan: value at %s is nested more than %d deep", e.Path, MaxCloneDepth)
	}
	return fmt.Sprintf("cannot copy plan: value at %s has unsupported type %s", e.Path, e.Type)
}

// MaxCloneDepth bounds the nesting of values CloneValue copies.
const MaxCloneDepth = 512

// ClonePlan returns a deep copy of plan sharing no mutable memory with it.
func ClonePlan(plan *RoutingPlan) (*RoutingPlan, error) {
	if plan == nil {
		return nil, nil
	}
	out := *plan
	out.Terminal = clonePtr(plan.Terminal)
	if plan.NeedsUserInput != nil {
		n := *plan.NeedsUserInput
		n.MissingFields = cloneSlice(n.MissingFields)
		out.NeedsUserInput = &n
	}
	if plan.Steps != nil {
		out.Steps = make([]RoutingStep, len(plan.Steps))
		for i := range plan.Steps {
			s, err := cloneStep(&plan.Steps[i], i)
			if err != nil {
				return nil, err
			}
			out.Steps[i] = s
		}
	}
	return &out, nil
}

func cloneStep(s *RoutingStep, i int) (RoutingStep, error) {
	out := *s
	out.DependsOn = cloneSlice(s.DependsOn)
	out.ImplicitDeps = cloneSlice(s.ImplicitDeps)
	if s.Metadata != nil {
		m, err := cloneValue(s.Metadata, 0)
		if err != nil {
			err.Path = fmt.Sprintf("steps[%d].metadata", i) + err.Path
			return RoutingStep{}, err
		}
		out.Metadata = m.(map[string]any)
	}
	return out, nil
}

// CloneValue deep-copies a JSON-shaped value.
func CloneValue(v any) (any, error) {
	c, err := cloneValue(v, 0)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// cloneValue builds the error path on the way out, so success allocates no strings.
func cloneValue(v any, depth int) (any, *CloneError) {
	if depth > MaxCloneDepth {
		return nil, &CloneError{}
	}
	switch t := v.(type) {
	case nil, string, bool, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, json.Number, time.Time:
		return t, nil
	case map[string]any:
		if t == nil {
			return t, nil
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			c, err := cloneValue(e, depth+1)
			if err != nil {
				err.Path = "." + k + err.Path
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		if t == nil {
			return t, nil
		}
		out := make([]any, len(t))
		for i, e := range t {
			c, err := cloneValue(e, depth+1)
			if err != nil {
				err.Path = fmt.Sprintf("[%d]", i) + err.Path
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case []string:
		return cloneSlice(t), nil
	case map[string]string:
		return cloneStrings(t), nil
	case json.RawMessage:
		return append(json.RawMessage(nil), t...), nil
	}
	return nil, &CloneError{Type: fmt.Sprintf("%T", v)}
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append([]T(nil), s...)
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
