package engine

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
)

// shape describes how encoding/json renders one Go type and where a View finds it.
type shape struct {
	typ    reflect.Type
	size   uintptr  // of a value, for indexing a slice of them
	kind   ViewKind // of a non-nil value
	holds  uint16   // bit k: a value of kind k can occur in a value of this type
	store  storage
	elem   *shape  // a pointer's target or a slice's element
	fields []field // a struct's members, in declaration order
	id     uint32  // its ViewType, never 0
}

// storage is how a Go value is laid out in memory.
type storage uint8

const (
	storeStruct storage = iota
	storeTime
	storeString
	storeBool
	storeInt
	storeInt8
	storeInt16
	storeInt32
	storeInt64
	storeAny    // an empty interface
	storeAnyMap // a map[string]any
	storeSlice
	storePointer
)

type field struct {
	name     string
	index    int     // of the Go field
	offset   uintptr // of the Go field
	omitZero bool
	// omitEmpty: absent when false, 0, "", nil or empty.
	omitEmpty bool
	shape     *shape
	// key is the member's name encoded as AppendJSON writes it, followed by ':'; keyHTML
	// escapes HTML characters too.
	key, keyHTML string
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	stringsType = reflect.TypeFor[[]string]()
	anyMapType  = reflect.TypeFor[map[string]any]()
	shapes      sync.Map // reflect.Type -> *shape
	shapesMu    sync.Mutex
	shapeIDs    uint32 // the last shape's id, under shapesMu
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
	for _, s := range building {
		s.holds = s.reach(map[*shape]bool{})
	}
	for t, s := range building {
		shapes.Store(t, s)
	}
	return s
}

// reach returns the kinds that can occur in a value of shape s.
func (s *shape) reach(seen map[*shape]bool) uint16 {
	if seen[s] {
		return 0
	}
	seen[s] = true
	k := uint16(1) << s.kind
	if s.elem != nil {
		k |= s.elem.reach(seen)
	}
	for _, f := range s.fields {
		k |= f.shape.reach(seen)
	}
	return k
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
	shapeIDs++
	s := &shape{typ: t, size: t.Size(), id: shapeIDs}
	building[t] = s
	switch k := t.Kind(); {
	case t == timeType:
		s.kind, s.store = ViewTime, storeTime
	case k == reflect.String:
		s.kind, s.store = ViewString, storeString
	case k == reflect.Bool:
		s.kind, s.store = ViewBool, storeBool
	case k >= reflect.Int && k <= reflect.Int64:
		s.kind, s.store = ViewInt, storeInt+storage(k-reflect.Int)
	case k == reflect.Interface && t.NumMethod() == 0:
		s.kind, s.store = ViewValue, storeAny
	case t == anyMapType:
		s.kind, s.store = ViewValue, storeAnyMap
	case k == reflect.Pointer:
		s.store, s.elem = storePointer, deriveShape(t.Elem(), building)
		s.kind = s.elem.kind
	case k == reflect.Slice && (t.Elem().Kind() == reflect.String || t.Elem().Kind() == reflect.Struct):
		s.kind, s.store, s.elem = ViewArray, storeSlice, deriveShape(t.Elem(), building)
	case k == reflect.Struct:
		s.kind, s.store = ViewObject, storeStruct
		for i := range t.NumField() {
			if f, ok := deriveField(t.Field(i), building); ok {
				f.index, f.offset = i, t.Field(i).Offset
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
	f := field{name: name, shape: deriveShape(sf.Type, building),
		key: string(appendString(nil, name, false)) + ":", keyHTML: string(appendString(nil, name, true)) + ":"}
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
