package ref

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unsafe"
)

// visitor is the callback Walk calls for every string.
type visitor = func(path string, s string) error

// MaxDepth is how many containers deep Walk descends before giving up with ErrTooDeep.
const MaxDepth = 512

// Errors Walk returns for values it cannot visit completely. A caller enforcing a policy
// over every string should treat both as a failure, never as "nothing found".
var (
	ErrTooDeep = errors.New("ref: value nested more than MaxDepth containers deep")
	ErrCycle   = errors.New("ref: value contains itself")
)

// Walk calls fn for every string in v, depth first. v is a JSON-ish value:
// map[string]any, []any, string, numbers, bool and nil as produced by encoding/json,
// plus map[string]string, []string and, through reflection, any other map with string
// keys, slice, array, pointer or named string type a Go caller may have built. Numbers
// (json.Number included), booleans, nil, structs and other kinds hold no strings Walk
// visits. Map keys are not visited.
//
// Map keys are visited in sorted order, so the order of fn calls, and therefore which
// error a caller reports first, never depends on map iteration. path is the string's
// location as a JSON Pointer (RFC 6901): "" for v itself, "/a/0/b" below it, with "~"
// and "/" in keys escaped as "~0" and "~1".
//
// Walk stops at the first error fn returns and returns it unchanged. It returns
// ErrTooDeep beyond MaxDepth nested containers and ErrCycle when a map or slice
// contains itself. It never modifies v.
func Walk(v any, fn func(path string, s string) error) error {
	w := walkers.Get().(*walker)
	err := w.walk(v, fn)
	w.reset()
	walkers.Put(w)
	return err
}

// walkers recycles walker scratch space, so a walk over a small value does not
// allocate beyond the path strings handed to fn. The callback is passed down the
// recursion rather than stored, so it does not escape.
var walkers = sync.Pool{New: func() any {
	w := &walker{}
	w.path = w.pathBuf[:0]
	w.keys = w.keyBuf[:0]
	w.seen = w.seenBuf[:0]
	return w
}}

// maxRetained bounds the scratch capacity a pooled walker keeps after a large walk.
const maxRetained = 1024

type walker struct {
	pathBuf [64]byte
	keyBuf  [16]string
	seenBuf [8]ident

	path []byte
	keys []string
	// seen holds the identities of the containers on the current path.
	seen []ident
}

func (w *walker) reset() {
	clear(w.keys[:cap(w.keys)])
	clear(w.seen[:cap(w.seen)])
	if cap(w.path) > maxRetained || cap(w.keys) > maxRetained || cap(w.seen) > maxRetained {
		w.path, w.keys, w.seen = w.pathBuf[:0], w.keyBuf[:0], w.seenBuf[:0]
	}
	w.path, w.keys, w.seen = w.path[:0], w.keys[:0], w.seen[:0]
}

// ident identifies a map, slice or pointer target; the zero ident never matches.
type ident struct {
	p unsafe.Pointer
	n int
}

func (w *walker) walk(v any, fn visitor) error {
	switch t := v.(type) {
	case nil, bool, float64, json.Number:
		return nil
	case string:
		return fn(string(w.path), t)
	case map[string]any:
		if len(t) == 0 {
			return nil
		}
		return w.container(ident{p: reflect.ValueOf(t).UnsafePointer()}, func() error {
			return walkMap(w, t, fn)
		})
	case []any:
		if len(t) == 0 {
			return nil
		}
		return w.container(ident{p: unsafe.Pointer(unsafe.SliceData(t)), n: len(t)}, func() error {
			for i, e := range t {
				if err := w.child("", i, e, fn); err != nil {
					return err
				}
			}
			return nil
		})
	case map[string]string:
		return walkMap(w, t, fn)
	case []string:
		for i, e := range t {
			if err := w.child("", i, e, fn); err != nil {
				return err
			}
		}
		return nil
	}
	return w.walkReflect(reflect.ValueOf(v), fn)
}

// walkReflect handles the kinds a Go caller may build beyond the JSON-ish ones.
func (w *walker) walkReflect(rv reflect.Value, fn visitor) error {
	switch rv.Kind() {
	case reflect.String:
		return fn(string(w.path), rv.String())
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return w.container(ident{p: rv.UnsafePointer()}, func() error { return w.walk(rv.Elem().Interface(), fn) })
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String || rv.Len() == 0 {
			return nil
		}
		return w.container(ident{p: rv.UnsafePointer()}, func() error {
			keys := rv.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int {
				switch x, y := a.String(), b.String(); {
				case x < y:
					return -1
				case x > y:
					return 1
				}
				return 0
			})
			for _, k := range keys {
				if err := w.child(k.String(), -1, rv.MapIndex(k).Interface(), fn); err != nil {
					return err
				}
			}
			return nil
		})
	case reflect.Slice, reflect.Array:
		if rv.Len() == 0 || rv.Type().Elem().Kind() == reflect.Uint8 {
			return nil
		}
		walkElems := func() error {
			for i := range rv.Len() {
				if err := w.child("", i, rv.Index(i).Interface(), fn); err != nil {
					return err
				}
			}
			return nil
		}
		if rv.Kind() == reflect.Array {
			return w.container(ident{}, walkElems)
		}
		return w.container(ident{p: rv.UnsafePointer(), n: rv.Len()}, walkElems)
	}
	return nil
}

// container runs body one level deeper, failing on a cycle (id already on the current
// path) or beyond MaxDepth.
func (w *walker) container(id ident, body func() error) error {
	if len(w.seen) >= MaxDepth {
		return ErrTooDeep
	}
	if id.p != nil && slices.Contains(w.seen, id) {
		return ErrCycle
	}
	w.seen = append(w.seen, id)
	err := body()
	w.seen = w.seen[:len(w.seen)-1]
	return err
}

// child walks v at path + "/" + key, or + "/" + index when index >= 0.
func (w *walker) child(key string, index int, v any, fn visitor) error {
	n := len(w.path)
	w.path = append(w.path, '/')
	if index >= 0 {
		w.path = strconv.AppendInt(w.path, int64(index), 10)
	} else {
		w.path = appendEscaped(w.path, key)
	}
	err := w.walk(v, fn)
	w.path = w.path[:n]
	return err
}

// walkMap walks m in sorted key order. The keys are pushed on the shared key stack;
// nested maps push above them, so keys stays valid while they are visited even if the
// stack grows, and they are popped before returning.
func walkMap[V any](w *walker, m map[string]V, fn visitor) error {
	n := len(w.keys)
	for k := range m {
		w.keys = append(w.keys, k)
	}
	keys := w.keys[n:]
	slices.Sort(keys)
	var err error
	for _, k := range keys {
		if err = w.child(k, -1, m[k], fn); err != nil {
			break
		}
	}
	clear(w.keys[n:])
	w.keys = w.keys[:n]
	return err
}

func appendEscaped(b []byte, key string) []byte {
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, c)
		}
	}
	return b
}
