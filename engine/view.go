package engine

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
)

// View reads a wire value as encoding/json renders it, in place and without encoding
// it. It is the one projection of the wire types (RoutingPlan, RoutingStep,
// ExecutionResult, StepResult, op.Call, and any struct built the same way) that every
// consumer reads: the CEL variables, the Rego input, the plan-decision memo key, deep
// copies. The description of each type is derived once from its json tags, so a field
// added to a wire type appears in every consumer under the rules of encoding/json:
//
//   - members are named and ordered by the json tags; an untagged exported field is
//     named after the field, unexported fields and "-" are skipped;
//   - an omitempty member is absent when false, 0, "", a nil pointer or interface, or an
//     empty slice or map; an omitzero member when its value is the zero value;
//   - a nil pointer, slice, map or interface is null;
//   - a time.Time is a string, RFC 3339 with nanoseconds (ViewTime, so that a consumer
//     can refuse the years encoding/json refuses); a time.Duration, like every integer,
//     a number (ViewInt, nanoseconds);
//   - an interface or map[string]any member is a JSON-shaped Go value (ViewValue) that
//     the consumer converts with its own rules for such values (metadata, parameters,
//     a step's response).
//
// The zero View is null. A View shares memory with the value it reads: it is valid while
// the value is not changed.
type View struct {
	v reflect.Value // addressable
	s *shape        // nil for null
}

// ViewKind is the JSON kind of a View.
type ViewKind uint8

// View kinds.
const (
	ViewNull   ViewKind = iota
	ViewBool            // Bool
	ViewInt             // Int: any integer, a time.Duration in nanoseconds
	ViewString          // Str
	ViewTime            // Time: a string, RFC 3339 with nanoseconds
	ViewArray           // Len and Index; Strings for a []string
	ViewObject          // NumField and Field, or Member
	ViewValue           // Value: a JSON-shaped Go value
)

// ViewOf returns the View of *p, null when p is nil. T must be a struct whose exported
// fields are strings, integers, booleans, time.Time, pointers to those or to such
// structs, []string, slices of such structs, map[string]any or any; ViewOf panics for
// any other type.
func ViewOf[T any](p *T) View {
	if p == nil {
		return View{}
	}
	return View{v: reflect.ValueOf(p).Elem(), s: shapeOf(reflect.TypeFor[T]())}
}

// Kind returns the JSON kind of v.
func (v View) Kind() ViewKind {
	if v.s == nil {
		return ViewNull
	}
	return v.s.kind
}

// Bool returns a ViewBool's value.
func (v View) Bool() bool { return v.v.Bool() }

// Int returns a ViewInt's value.
func (v View) Int() int64 { return v.v.Int() }

// Str returns a ViewString's value.
func (v View) Str() string { return v.v.String() }

// Time returns a ViewTime's value.
func (v View) Time() time.Time { return *v.v.Addr().Interface().(*time.Time) }

// Value returns a ViewValue's Go value; it is shared, not copied.
func (v View) Value() any { return v.v.Interface() }

// Len returns the number of elements of a ViewArray, or of present members of a
// ViewObject.
func (v View) Len() int {
	if v.s.kind == ViewArray {
		return v.v.Len()
	}
	n := 0
	for i := range v.s.fields {
		if v.present(i) {
			n++
		}
	}
	return n
}

// Index returns element i of a ViewArray.
func (v View) Index(i int) View { return viewAt(v.v.Index(i), v.s.elem) }

// Strings returns a ViewArray that is a []string as that slice, shared, not copied.
func (v View) Strings() ([]string, bool) {
	if v.s.kind != ViewArray || v.s.elem.kind != ViewString || v.v.Type() != stringsType {
		return nil, false
	}
	return *v.v.Addr().Interface().(*[]string), true
}

// NumField returns the number of members a ViewObject may have: its declared fields,
// present or not.
func (v View) NumField() int { return len(v.s.fields) }

// Field returns the name and value of declared member i of a ViewObject, and whether
// encoding/json writes it (false for an omitted empty member).
func (v View) Field(i int) (name string, value View, present bool) {
	f := &v.s.fields[i]
	if !v.present(i) {
		return f.name, View{}, false
	}
	return f.name, viewAt(v.v.Field(f.index), f.shape), true
}

// Member returns the member of a ViewObject named name, and whether encoding/json writes
// it.
func (v View) Member(name string) (View, bool) {
	for i := range v.s.fields {
		if v.s.fields[i].name == name {
			_, m, ok := v.Field(i)
			return m, ok
		}
	}
	return View{}, false
}

func (v View) present(i int) bool {
	f := &v.s.fields[i]
	switch fv := v.v.Field(f.index); {
	case f.omitZero && fv.IsZero():
		return false
	case !f.omitEmpty:
		return true
	default:
		return !isEmpty(fv)
	}
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String, reflect.Slice, reflect.Map:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// viewAt returns the View of v, described by s, following a pointer and rendering nil
// as null.
func viewAt(v reflect.Value, s *shape) View {
	if s.pointer {
		if v.IsNil() {
			return View{}
		}
		v, s = v.Elem(), s.elem
	}
	if s.nilable && v.IsNil() {
		return View{}
	}
	return View{v: v, s: s}
}

// shape describes how encoding/json renders one Go type.
type shape struct {
	typ     reflect.Type
	kind    ViewKind // of a non-nil value
	pointer bool     // a pointer to elem
	nilable bool     // a slice, map or interface: nil is null
	elem    *shape   // a pointer's target or a slice's element
	fields  []field  // a struct's members, in declaration order
}

type field struct {
	name     string
	index    int // of the Go field
	omitZero bool
	// omitEmpty: absent when empty (isEmpty).
	omitEmpty bool
	shape     *shape
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	stringsType = reflect.TypeFor[[]string]()
	anyMapType  = reflect.TypeFor[map[string]any]()
	shapes      sync.Map // reflect.Type -> *shape
	shapesMu    sync.Mutex
)

// shapeOf returns the shape of t, derived on first use.
func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	shapesMu.Lock()
	defer shapesMu.Unlock()
	building := map[reflect.Type]*shape{}
	s := deriveShape(t, building)
	for t, s := range building {
		shapes.Store(t, s)
	}
	return s
}

// deriveShape builds the shape of t. building holds the shapes derived so far, stored
// only once all are complete, so that a type containing itself through a pointer or a
// slice ends.
func deriveShape(t reflect.Type, building map[reflect.Type]*shape) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	if s, ok := building[t]; ok {
		return s
	}
	s := &shape{typ: t}
	building[t] = s
	switch k := t.Kind(); {
	case t == timeType:
		s.kind = ViewTime
	case k == reflect.String:
		s.kind = ViewString
	case k == reflect.Bool:
		s.kind = ViewBool
	case k >= reflect.Int && k <= reflect.Int64:
		s.kind = ViewInt
	case k == reflect.Interface && t.NumMethod() == 0, t == anyMapType:
		s.kind, s.nilable = ViewValue, true
	case k == reflect.Pointer:
		s.pointer, s.elem = true, deriveShape(t.Elem(), building)
		s.kind = s.elem.kind
	case k == reflect.Slice && (t.Elem().Kind() == reflect.String || t.Elem().Kind() == reflect.Struct):
		s.kind, s.nilable, s.elem = ViewArray, true, deriveShape(t.Elem(), building)
	case k == reflect.Struct:
		s.kind = ViewObject
		for i := range t.NumField() {
			if f, ok := deriveField(t.Field(i), building); ok {
				f.index = i
				s.fields = append(s.fields, f)
			}
		}
	default:
		panic(fmt.Sprintf("engine: no wire view of %s", t))
	}
	return s
}

func deriveField(sf reflect.StructField, building map[reflect.Type]*shape) (field, bool) {
	tag := sf.Tag.Get("json")
	if !sf.IsExported() || tag == "-" {
		return field{}, false
	}
	if sf.Anonymous {
		panic(fmt.Sprintf("engine: no wire view of embedded field %s", sf.Name))
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = sf.Name
	}
	f := field{name: name, shape: deriveShape(sf.Type, building)}
	for _, o := range strings.Split(opts, ",") {
		switch o {
		case "omitempty":
			f.omitEmpty = true
		case "omitzero":
			f.omitZero = true
		case "":
		default:
			panic(fmt.Sprintf("engine: no wire view of json option %q on %s", o, sf.Name))
		}
	}
	return f, true
}

// ViewNames lists the member names of every object a View of T may contain, T's own
// and those of the structs it holds, without duplicates: for a consumer that prepares
// one key per name.
func ViewNames[T any]() []string {
	var names []string
	seen := map[*shape]bool{}
	var walk func(*shape)
	walk = func(s *shape) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		for _, f := range s.fields {
			if !slices.Contains(names, f.name) {
				names = append(names, f.name)
			}
			walk(f.shape)
		}
		walk(s.elem)
	}
	walk(shapeOf(reflect.TypeFor[T]()))
	return names
}
