// Package regovalue converts Go values to Rego values exactly as encoding/json would
// render them: the wire types through their engine.View, JSON-shaped Go values (what
// encoding/json or a YAML decoder produces, plus []string and other Go values a caller
// may have built) directly, without a JSON round trip.
package regovalue

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine"
)

// Of converts a JSON-shaped Go value. It follows encoding/json: nil slices and maps
// become null, other types go through a JSON round trip so their json tags apply, and
// non-finite floats are an error.
func Of(v any) (ast.Value, error) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("unsupported number %v", x)
		}
		return ast.InterfaceToValue(x)
	case []any:
		if x == nil {
			return ast.NullValue, nil
		}
		terms := make([]*ast.Term, len(x))
		for i, e := range x {
			ev, err := Of(e)
			if err != nil {
				return nil, err
			}
			terms[i] = ast.NewTerm(ev)
		}
		return ast.NewArray(terms...), nil
	case map[string]any:
		if x == nil {
			return ast.NullValue, nil
		}
		items := make([][2]*ast.Term, 0, len(x))
		for k, e := range x {
			ev, err := Of(e)
			if err != nil {
				return nil, err
			}
			items = append(items, ast.Item(ast.InternedTerm(k), ast.NewTerm(ev)))
		}
		return ast.NewObject(items...), nil
	case nil, bool, string, int, int64, json.Number:
		return ast.InterfaceToValue(x)
	}
	if rv := reflect.ValueOf(v); nilable(rv.Kind()) && rv.IsNil() {
		return ast.NullValue, nil // as encoding/json renders a nil pointer, map or slice
	}
	return ast.InterfaceToValue(v)
}

func nilable(k reflect.Kind) bool {
	return k == reflect.Pointer || k == reflect.Map || k == reflect.Slice
}

// Term converts the value v views.
func Term(v engine.View) (*ast.Term, error) {
	switch v.Kind() {
	case engine.ViewBool:
		return ast.InternedTerm(v.Bool()), nil
	case engine.ViewInt:
		return ast.InternedTerm(v.Int()), nil
	case engine.ViewString:
		return ast.StringTerm(v.Str()), nil
	case engine.ViewTime:
		s, err := TimeString(v.Time())
		if err != nil {
			return nil, err
		}
		return ast.StringTerm(s), nil
	case engine.ViewValue:
		x, err := Of(v.Value())
		if err != nil {
			return nil, err
		}
		return ast.NewTerm(x), nil
	case engine.ViewArray:
		terms := make([]*ast.Term, v.Len())
		for i := range terms {
			t, err := Term(v.Index(i))
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			terms[i] = t
		}
		return ast.ArrayTerm(terms...), nil
	case engine.ViewObject:
		items := make([][2]*ast.Term, 0, v.Len())
		for i := range v.NumField() {
			name, f, ok := v.Field(i)
			if !ok {
				continue
			}
			t, err := Term(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			items = append(items, ast.Item(Key(name), t))
		}
		return ast.ObjectTerm(items...), nil
	}
	return ast.NullTerm(), nil
}

var (
	errYearRange = errors.New("year outside of range [0,9999]")
	errZoneRange = errors.New("timezone hour outside of range [0,23]")
)

// TimeString renders t as time.Time.MarshalJSON does, without the quotes, and fails
// where it fails.
func TimeString(t time.Time) (string, error) {
	if err := checkTime(t); err != nil {
		return "", err
	}
	return t.Format(time.RFC3339Nano), nil
}

func checkTime(t time.Time) error {
	if y := t.Year(); y < 0 || y > 9999 {
		return errYearRange
	}
	if _, off := t.Zone(); off <= -24*60*60 || off >= 24*60*60 {
		return errZoneRange
	}
	return nil
}

// keys holds the object keys of the wire types, built once and shared by every input:
// Rego never mutates terms.
var keys = map[string]*ast.Term{}

// Intern prepares the object keys of every object a View of T may hold. It must be
// called during package initialization only.
func Intern[T any]() {
	for _, name := range engine.ViewNames[T]() {
		if keys[name] == nil {
			keys[name] = ast.StringTerm(name)
		}
	}
}

// Key returns the term of an object key, shared when Intern prepared it.
func Key(name string) *ast.Term {
	if k := keys[name]; k != nil {
		return k
	}
	return ast.StringTerm(name)
}
