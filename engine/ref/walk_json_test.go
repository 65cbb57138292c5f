package ref_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine/internal/wiretest"
	"github.com/agentd-dev/agentd/engine/ref"
)

// jsonStrings lists the string values of a decoded JSON value with their JSON Pointers,
// objects in key order: what Walk must visit.
func jsonStrings(v any, path string, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, path+"="+x)
	case []any:
		for i, e := range x {
			jsonStrings(e, path+"/"+strconv.Itoa(i), out)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			jsonStrings(x[k], path+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), out)
		}
	}
}

type quoted string

func (q quoted) MarshalText() ([]byte, error) { return []byte("«" + string(q) + "»"), nil }

// TestWalk_AgreesWithJSON: over generated step parameters, and Go values encoding/json
// renders in its own way, Walk visits exactly the string values encoding/json writes,
// at their JSON Pointers, in order.
func TestWalk_AgreesWithJSON(t *testing.T) {
	r := wiretest.Rand(6)
	values := []any{
		struct {
			A string `json:"a"`
			B []byte `json:"b,omitempty"`
			C *string
			d string
		}{A: "{{step-1.x.y}}", B: []byte("x"), d: "hidden"},
		map[string]quoted{"k": "v"}, []json.RawMessage{json.RawMessage(`{"z":["{{step-2.a.b}}"]}`)},
		time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), map[int]any{2: "b", 10: "a"}, [2]quoted{"x", "y"},
	}
	for range 2000 {
		values = append(values, wiretest.Value(r, 4))
	}
	for _, v := range values {
		var got, want []string
		if err := ref.Walk(v, func(path []byte, s string) error {
			got = append(got, string(path)+"="+s)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		jsonStrings(wiretest.JSON(t, v), "", &want)
		if !slices.Equal(got, want) {
			t.Fatalf("Walk(%#v) visits\n %q\nencoding/json writes\n %q", v, got, want)
		}
	}
}
