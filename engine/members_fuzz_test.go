package engine_test

import (
	"encoding/json"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

func TestRepeatedMember(t *testing.T) {
	for doc, want := range map[string]string{
		`{"a":1,"a":2}`:                    "a",
		`{"a":1,"\u0061":2}`:               "a",
		`{"x":{"a":[1,{"b":1,"b":2}]}}`:    "b",
		`[{"a":1},{"a":2}]`:                "",
		`{"a":{"a":1},"b":"a"}`:            "",
		`{"a":1,"A":2}`:                    "", // AmbiguousMember's
		`{"a":[],"b":{},"c":"a","a":null}`: "a",
		`not json`:                         "",
	} {
		got, ok := engine.RepeatedMember([]byte(doc))
		if got != want || ok != (want != "") {
			t.Errorf("RepeatedMember(%s) = %q, %v; want %q", doc, got, ok, want)
		}
	}
}

// FuzzRepeatedMember: on valid JSON, RepeatedMember finds a repeated name exactly when
// decoding the document loses a member (fewer members decoded than the document has
// name separators outside its strings).
func FuzzRepeatedMember(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `[{"a":{"b":1}},{"a":2}]`, `{"a":"x:y","b":[":"]}`, `{"\ud800":1,"\udc00":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		_, repeated := engine.RepeatedMember(data)
		if lost := members(v) < separators(data); repeated != lost {
			t.Fatalf("%s: RepeatedMember %v, but decoding lost a member: %v", data, repeated, lost)
		}
	})
}

// members counts the members of every object in v.
func members(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			n += 1 + members(x)
		}
	case []any:
		for _, x := range v {
			n += members(x)
		}
	}
	return n
}

// separators counts the name separators (':') of a JSON document outside its strings.
func separators(data []byte) int {
	n, in := 0, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && c == ':':
			n++
		}
	}
	return n
}
