package ref

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

type visit struct{ path, s string }

func collect(t *testing.T, v any) []visit {
	t.Helper()
	var got []visit
	if err := Walk(v, func(path []byte, s string) error {
		got = append(got, visit{string(path), s})
		return nil
	}); err != nil {
		t.Fatalf("Walk error = %v", err)
	}
	return got
}

func TestWalk_Visits(t *testing.T) {
	type named string
	str := "ptr"
	tests := []struct {
		name string
		in   any
		want []visit
	}{
		{"nil", nil, nil},
		{"scalars", []any{1.5, true, nil, json.Number("3")}, nil},
		{"root string", "x", []visit{{"", "x"}}},
		{"sorted keys", map[string]any{"b": "2", "a": "1", "c": 3.0}, []visit{{"/a", "1"}, {"/b", "2"}}},
		{"nested", map[string]any{
			"q":     "{{step-1.x}}",
			"items": []any{"a", map[string]any{"k": "v"}, []any{"deep"}},
		}, []visit{{"/items/0", "a"}, {"/items/1/k", "v"}, {"/items/2/0", "deep"}, {"/q", "{{step-1.x}}"}}},
		{"pointer escapes", map[string]any{"a/b": map[string]any{"c~d": "x"}}, []visit{{"/a~1b/c~0d", "x"}}},
		{"empty key", map[string]any{"": "x"}, []visit{{"/", "x"}}},
		{"string map", map[string]string{"z": "1", "y": "2"}, []visit{{"/y", "2"}, {"/z", "1"}}},
		{"string slice", []string{"a", "b"}, []visit{{"/0", "a"}, {"/1", "b"}}},
		// Other Go values as encoding/json writes them.
		{"named string", named("n"), []visit{{"", "n"}}},
		{"typed map", map[string][]named{"k": {"v"}}, []visit{{"/k/0", "v"}}},
		{"array", [2]string{"a", "b"}, []visit{{"/0", "a"}, {"/1", "b"}}},
		{"pointer", &str, []visit{{"", "ptr"}}},
		{"bytes as base64", []byte("{{step-1}}"), []visit{{"", "e3tzdGVwLTF9fQ=="}}},
		{"struct by its json tags", struct {
			S string `json:"s"`
			T string `json:"-"`
		}{"x", "hidden"}, []visit{{"/s", "x"}}},
		{"a marshaler by its output", json.RawMessage(`{"b":"{{step-1.x}}"}`), []visit{{"/b", "{{step-1.x}}"}}},
		{"a time as its text", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), []visit{{"", "2025-01-02T03:04:05Z"}}},
		{"non-string keys", map[int]string{1: "x"}, []visit{{"/1", "x"}}},
		{"ints", []int{1, 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := collect(t, tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("visits = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWalk_DecodedJSON(t *testing.T) {
	var v any
	if err := json.Unmarshal([]byte(`{"x":[{"b":"1","a":"2"},"3"],"a":"4"}`), &v); err != nil {
		t.Fatal(err)
	}
	want := []visit{{"/a", "4"}, {"/x/0/a", "2"}, {"/x/0/b", "1"}, {"/x/1", "3"}}
	if got := collect(t, v); !reflect.DeepEqual(got, want) {
		t.Fatalf("visits = %v, want %v", got, want)
	}
}

func TestWalk_StopsAtFirstError(t *testing.T) {
	stop := errors.New("stop")
	var seen []string
	err := Walk(map[string]any{"a": "1", "b": []any{"2", "3"}, "c": "4"}, func(path []byte, s string) error {
		seen = append(seen, string(path))
		if s == "2" {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("err = %v, want the callback's error unchanged", err)
	}
	if want := []string{"/a", "/b/0"}; !reflect.DeepEqual(seen, want) {
		t.Fatalf("visited %v, want %v", seen, want)
	}
	// The pooled walker must come back clean after an early stop.
	if got := collect(t, map[string]any{"z": "1"}); !reflect.DeepEqual(got, []visit{{"/z", "1"}}) {
		t.Fatalf("walk after early stop = %v", got)
	}
}

func TestWalk_Limits(t *testing.T) {
	cyclicMap := map[string]any{}
	cyclicMap["self"] = cyclicMap
	cyclicSlice := make([]any, 2)
	cyclicSlice[1] = cyclicSlice
	var deep any = "leaf"
	for range MaxDepth + 1 {
		deep = []any{deep}
	}
	var shallow any = "leaf"
	for range MaxDepth {
		shallow = []any{shallow}
	}
	tests := []struct {
		name string
		in   any
		want error
	}{
		{"cyclic map", cyclicMap, ErrCycle},
		{"cyclic slice", cyclicSlice, ErrCycle},
		{"too deep", deep, ErrTooDeep},
		{"at the limit", shallow, nil},
		{"shared not cyclic", map[string]any{"a": cyclicSlice[:1], "b": cyclicSlice[:1]}, nil},
		{"a cycle through a pointer", cyclicPointer(), &json.UnsupportedValueError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Walk(tt.in, func([]byte, string) error { return nil })
			if target := new(*json.UnsupportedValueError); errors.As(tt.want, target) {
				if !errors.As(err, target) {
					t.Fatalf("Walk error = %v, want encoding/json's error", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Walk error = %v, want %v", err, tt.want)
			}
		})
	}
}

type node struct{ Next *node }

func cyclicPointer() any {
	n := &node{}
	n.Next = n
	return n
}

func TestWalk_DoesNotMutate(t *testing.T) {
	in := map[string]any{"b": []any{"x", map[string]any{"c": "y"}}, "a": "z"}
	before, _ := json.Marshal(in)
	collect(t, in)
	after, _ := json.Marshal(in)
	if string(before) != string(after) {
		t.Fatalf("Walk mutated its input: %s -> %s", before, after)
	}
}

func BenchmarkWalk_Parameters(b *testing.B) {
	params := map[string]any{
		"symbol":   "AAPL",
		"quantity": 10.0,
		"price":    "{{step-1.response.data.price}}",
		"options":  map[string]any{"tif": "day", "tags": []any{"a", "b"}},
	}
	fn := func(path []byte, s string) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		_ = Walk(params, fn)
	}
}
