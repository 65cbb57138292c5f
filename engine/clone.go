package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
	if err := deepCopy(&out); err != nil {
		return nil, err
	}
	return &out, nil
}

// deepCopy replaces every reference *p holds with a deep copy, so that *p, a shallow
// copy of a wire value, shares no mutable memory with the original. What it copies is
// what the value's View shows: pointers, slices and the JSON-shaped values (through
// CloneValue); fields encoding/json skips are not copied.
func deepCopy[T any](p *T) error {
	if err := copyReferences(reflect.ValueOf(p).Elem(), shapeOf(reflect.TypeFor[T]())); err != nil {
		err.Path = strings.TrimPrefix(err.Path, ".")
		return err
	}
	return nil
}

// copyReferences replaces the references of v, an addressable value described by s.
// It builds the error path on the way out, so success allocates no strings.
func copyReferences(v reflect.Value, s *shape) *CloneError {
	switch {
	case s.store == storePointer:
		if v.IsNil() {
			return nil
		}
		c := reflect.New(s.elem.typ)
		c.Elem().Set(v.Elem())
		if err := copyReferences(c.Elem(), s.elem); err != nil {
			return err
		}
		v.Set(c)
	case s.kind == ViewValue:
		c, err := cloneValue(v.Interface(), 0)
		if err != nil {
			return err
		}
		if c == nil {
			v.SetZero()
		} else {
			v.Set(reflect.ValueOf(c))
		}
	case s.kind == ViewArray:
		if v.IsNil() {
			return nil
		}
		if ss, ok := v.Addr().Interface().(*[]string); ok {
			*ss = slices.Clone(*ss)
			return nil
		}
		c := reflect.MakeSlice(s.typ, v.Len(), v.Len())
		reflect.Copy(c, v)
		for i := range c.Len() {
			if err := copyReferences(c.Index(i), s.elem); err != nil {
				err.Path = "[" + strconv.Itoa(i) + "]" + err.Path
				return err
			}
		}
		v.Set(c)
	case s.kind == ViewObject:
		for _, f := range s.fields {
			if err := copyReferences(v.Field(f.index), f.shape); err != nil {
				err.Path = "." + f.name + err.Path
				return err
			}
		}
	}
	return nil
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
		return slices.Clone(t), nil
	case map[string]string:
		return maps.Clone(t), nil
	case json.RawMessage:
		return append(json.RawMessage(nil), t...), nil
	}
	return nil, &CloneError{Type: fmt.Sprintf("%T", v)}
}
