package expr

import (
	"bytes"
	"fmt"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// maxResultDepth bounds the nesting of a converted result; it also stops the conversion of
// a value that contains itself.
const maxResultDepth = 64

// native converts a CEL value to a Go value that shares no memory with the inputs.
func native(v ref.Val, depth int) (any, error) {
	switch t := v.(type) {
	case types.Bool:
		return bool(t), nil
	case types.String:
		return string(t), nil
	case types.Int:
		return int64(t), nil
	case types.Uint:
		return uint64(t), nil
	case types.Double:
		return float64(t), nil
	case types.Bytes:
		return bytes.Clone(t), nil
	case types.Null:
		return nil, nil
	case types.Timestamp:
		return t.Time, nil
	case types.Duration:
		return t.Duration, nil
	case ref.Type:
		return t.TypeName(), nil
	}
	if depth >= maxResultDepth {
		return nil, fmt.Errorf("result nested deeper than %d levels", maxResultDepth)
	}
	switch t := v.(type) {
	case traits.Mapper:
		return nativeMap(t, depth)
	case traits.Lister:
		out := make([]any, 0, int(t.Size().(types.Int)))
		for it := t.Iterator(); it.HasNext() == types.True; {
			e, err := native(it.Next(), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	return nil, fmt.Errorf("result of type %s has no Go representation", v.Type().TypeName())
}

func nativeMap(m traits.Mapper, depth int) (map[string]any, error) {
	out := make(map[string]any, int(m.Size().(types.Int)))
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		key, ok := k.(types.String)
		if !ok {
			return nil, fmt.Errorf("a result map key is a %s, not a string", k.Type().TypeName())
		}
		val, _ := m.Find(k)
		e, err := native(val, depth+1)
		if err != nil {
			return nil, err
		}
		out[string(key)] = e
	}
	return out, nil
}
