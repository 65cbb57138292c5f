package ref

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unsafe"
)

// visitor is the callback Walk calls for every string.
type visitor = func(path []byte, s string) error

// MaxDepth is how many containers deep Walk descends before giving up with ErrTooDeep.
const MaxDepth = 512

// Errors Walk returns for values it cannot visit completely. A caller enforcing a policy
// over every string should treat both as a failure, never as "nothing found".
var (
	ErrTooDeep = errors.New("ref: value nested more than MaxDepth containers deep")
	ErrCycle   = errors.New("ref: value contains itself")
)

// Walk calls fn for every string value encoding/json would write for v, depth first.
// The JSON-shaped values encoding/json decodes into (map[string]any, []any, string,
// numbers, json.Number, bool, nil), string slices and maps and every Go number are read
// in place; any other value (a struct, a pointer, a json.Marshaler, a []byte, a typed
// map or slice) is read as encoding/json encodes it, through a JSON round trip. Map keys
// are not visited, and strings are visited as Go holds them (encoding/json would replace
// invalid UTF-8).
//
// Map keys are visited in sorted order, so the order of fn calls, and therefore which
// error a caller reports first, never depends on map iteration. path is the string's
// location as a JSON Pointer (RFC 6901): "" for v itself, "/a/0/b" below it, with "~"
// and "/" in keys escaped as "~0" and "~1"; its bytes are Walk's own, valid until fn
// returns (a caller that keeps a path copies it).
//
// Walk stops at the first error fn returns and returns it unchanged. It returns
// ErrTooDeep beyond MaxDepth nested containers, ErrCycle when a map or slice contains
// itself, and encoding/json's error for a value it cannot encode. It never modifies v.
func Walk(v any, fn func(path []byte, s string) error) error {
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

// ident identifies a map or a slice.
type ident struct {
	p unsafe.Pointer
	n int
}

func (w *walker) walk(v any, fn visitor) error {
	switch t := v.(type) {
	case nil, bool, float64, float32, json.Number, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64:
		return nil
	case string:
		return fn(w.path, t)
	case map[string]any:
		if len(t) == 0 {
			return nil
		}
		return w.container(reflect.ValueOf(t).UnsafePointer(), 0, func() error {
			return walkMap(w, t, fn)
		})
	case []any:
		if len(t) == 0 {
			return nil
		}
		return w.container(unsafe.Pointer(unsafe.SliceData(t)), len(t), func() error {
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
	return w.walkEncoded(v, fn)
}

// walkEncoded walks what encoding/json writes for v.
func (w *walker) walkEncoded(v any, fn visitor) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var decoded any
	if err := d.Decode(&decoded); err != nil {
		return err
	}
	return w.walk(decoded, fn)
}

// container runs body one level deeper, failing on a cycle (the container at p, of
// length n, already on the current path) or beyond MaxDepth.
func (w *walker) container(p unsafe.Pointer, n int, body func() error) error {
	if len(w.seen) >= MaxDepth {
		return ErrTooDeep
	}
	id := ident{p: p, n: n}
	if slices.Contains(w.seen, id) {
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
