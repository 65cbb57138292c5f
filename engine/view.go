package engine

import (
	"reflect"
	"time"
	"unsafe"
)

// View reads a wire value as encoding/json renders it, in place and without encoding
// it. It is the one projection of the wire types (RoutingPlan, RoutingStep,
// ExecutionResult, StepResult, op.Call, and any struct built the same way) that every
// consumer reads: the CEL variables, the Rego input, the plan-decision memo key, deep
// copies (ClonePlan); the JSON-shaped values it ends at, such as a step's
// parameters, are walked for {{step-…}} references by ref.Walk under the same rules.
// The description of each type is derived once from its json tags, so a field added to
// a wire type appears in every consumer under the rules of encoding/json:
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
// the value is not changed. It reads in place through the offsets the description
// records, so that reading allocates nothing.
type View struct {
	p unsafe.Pointer // the Go value
	s *shape         // nil for null
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
	ViewObject          // NumField and Field; MemberIndex finds a member by name
	ViewValue           // Value: a JSON-shaped Go value
)

// ViewOf returns the View of *p, null when p is nil. T must be a struct whose exported
// fields are strings, integers, booleans, time.Time, pointers to those or to such
// structs, []string, slices of such structs, map[string]any or any; ViewOf panics for
// any other type.
func ViewOf[T any](p *T) View { return ViewerOf[T]().View(p) }

// Viewer makes the Views of *T with T's description looked up once, when it is made:
// ViewOf for a hot path, kept in a variable. Make it with ViewerOf: the zero Viewer
// panics on a non-nil pointer.
type Viewer[T any] struct{ s *shape }

// ViewerOf returns the Viewer of T. It panics where ViewOf does.
func ViewerOf[T any]() Viewer[T] { return Viewer[T]{shapeOf(reflect.TypeFor[T]())} }

// View returns ViewOf(p).
func (w Viewer[T]) View(p *T) View {
	if p == nil {
		return View{}
	}
	return viewAt(unsafe.Pointer(p), w.s)
}

// The Viewers of the wire types.
var (
	planViews   = ViewerOf[RoutingPlan]()
	stepViews   = ViewerOf[RoutingStep]()
	resultViews = ViewerOf[ExecutionResult]()
)

// Kind returns the JSON kind of v.
func (v View) Kind() ViewKind {
	if v.s == nil {
		return ViewNull
	}
	return v.s.kind
}

// Holds reports whether a value of kind k can occur in v, v itself included, judging by
// the Go types alone: a consumer can skip, without reading them, the parts that cannot
// matter to it.
func (v View) Holds(k ViewKind) bool { return v.s != nil && v.s.holds&(1<<k) != 0 }

// Bool returns a ViewBool's value.
func (v View) Bool() bool { return *(*bool)(v.p) }

// Int returns a ViewInt's value.
func (v View) Int() int64 {
	switch v.s.store {
	case storeInt:
		return int64(*(*int)(v.p))
	case storeInt8:
		return int64(*(*int8)(v.p))
	case storeInt16:
		return int64(*(*int16)(v.p))
	case storeInt32:
		return int64(*(*int32)(v.p))
	}
	return *(*int64)(v.p)
}

// Str returns a ViewString's value.
func (v View) Str() string { return *(*string)(v.p) }

// Time returns a ViewTime's value.
func (v View) Time() time.Time { return *(*time.Time)(v.p) }

// Value returns a ViewValue's Go value; it is shared, not copied.
func (v View) Value() any {
	if v.s.store == storeAnyMap {
		return *(*map[string]any)(v.p)
	}
	return *(*any)(v.p)
}

// Len returns the number of elements of a ViewArray, or of present members of a
// ViewObject.
func (v View) Len() int {
	if v.s.kind == ViewArray {
		return len(*(*[]byte)(v.p)) // every slice header has the layout of a []byte's
	}
	n := 0
	for i := range v.s.fields {
		if v.present(&v.s.fields[i]) {
			n++
		}
	}
	return n
}

// Index returns element i of a ViewArray.
func (v View) Index(i int) View {
	data := unsafe.Pointer(unsafe.SliceData(*(*[]byte)(v.p)))
	return viewAt(unsafe.Add(data, uintptr(i)*v.s.elem.size), v.s.elem)
}

// Strings returns a ViewArray that is a []string as that slice, shared, not copied.
func (v View) Strings() ([]string, bool) {
	if v.s.kind != ViewArray || v.s.typ != stringsType {
		return nil, false
	}
	return *(*[]string)(v.p), true
}

// NumField returns the number of members a ViewObject may have: its declared fields,
// present or not.
func (v View) NumField() int { return len(v.s.fields) }

// Field returns the name and value of declared member i of a ViewObject, and whether
// encoding/json writes it (false for an omitted empty member).
func (v View) Field(i int) (name string, value View, present bool) {
	f := &v.s.fields[i]
	if !v.present(f) {
		return f.name, View{}, false
	}
	return f.name, v.member(f), true
}

// member returns the View of v's member f, present or not.
func (v View) member(f *field) View { return viewAt(unsafe.Add(v.p, f.offset), f.shape) }

// MemberIndex returns the index (for Field) of the declared member of a ViewObject named
// name, or -1 when it has none.
func (v View) MemberIndex(name string) int {
	for i := range v.s.fields {
		if v.s.fields[i].name == name {
			return i
		}
	}
	return -1
}

// StringMember returns declared member i of a ViewObject when it is a string (a Go
// string, not a pointer to one), and whether encoding/json writes it; isString is false
// for a member of any other type. It is Field for the members most readers read, without
// building their View.
func (v View) StringMember(i int) (s string, present, isString bool) {
	f := &v.s.fields[i]
	if f.shape.store != storeString {
		return "", false, false
	}
	s = *(*string)(unsafe.Add(v.p, f.offset))
	return s, s != "" || !f.omitEmpty && !f.omitZero, true
}

// MapMember is StringMember for a member that is a map[string]any (a ViewValue, or null
// when nil): the map, and whether encoding/json writes it; isMap is false for a member
// of any other type.
func (v View) MapMember(i int) (m map[string]any, present, isMap bool) {
	f := &v.s.fields[i]
	if f.shape.store != storeAnyMap {
		return nil, false, false
	}
	m = *(*map[string]any)(unsafe.Add(v.p, f.offset))
	return m, (m != nil || !f.omitZero) && (len(m) > 0 || !f.omitEmpty), true
}

// ViewType identifies the Go type a View reads (the zero ViewType is null's): values
// of one ViewType have the same members at the same indexes, so that a reader can keep
// a member's index (MemberIndex) for the next value of that type without comparing
// names again.
type ViewType struct{ id uint32 }

// Type returns the ViewType of v. It is a number, so that keeping it keeps nothing
// of v.
func (v View) Type() ViewType {
	if v.s == nil {
		return ViewType{}
	}
	return ViewType{v.s.id}
}

// present reports whether encoding/json writes member f of v.
func (v View) present(f *field) bool {
	return !f.omitEmpty && !f.omitZero || v.written(f)
}

// written is present for an omitempty or omitzero member.
func (v View) written(f *field) bool {
	p := unsafe.Add(v.p, f.offset)
	switch {
	case f.omitZero && reflect.NewAt(f.shape.typ, p).Elem().IsZero():
		return false
	case !f.omitEmpty:
		return true
	}
	switch f.shape.store {
	case storeString:
		return len(*(*string)(p)) > 0
	case storeBool:
		return *(*bool)(p)
	case storeInt, storeInt8, storeInt16, storeInt32, storeInt64:
		return View{p, f.shape}.Int() != 0
	case storeSlice:
		return len(*(*[]byte)(p)) > 0
	case storeAnyMap:
		return len(*(*map[string]any)(p)) > 0
	case storeAny:
		return *(*any)(p) != nil
	case storePointer:
		return *(*unsafe.Pointer)(p) != nil
	}
	return true // a struct or a time is never empty
}

// viewAt returns the View of the value at p, described by s, following a pointer and
// rendering nil as null.
func viewAt(p unsafe.Pointer, s *shape) View {
	if s.store == storePointer {
		if p = *(*unsafe.Pointer)(p); p == nil {
			return View{}
		}
		s = s.elem
	}
	switch s.store {
	case storeSlice:
		if unsafe.SliceData(*(*[]byte)(p)) == nil {
			return View{}
		}
	case storeAnyMap:
		if *(*map[string]any)(p) == nil {
			return View{}
		}
	case storeAny:
		if *(*any)(p) == nil {
			return View{}
		}
	}
	return View{p: p, s: s}
}
