package jsonread_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/jsonread"
)

// viaEncodingJSON decodes text as the stage API's slow path does: one value, unknown
// fields refused.
func viaEncodingJSON(text []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if dec.Decode(v) != nil {
		return false
	}
	_, err := dec.Token()
	return errors.Is(err, io.EOF) // nothing after the value
}

func readValue(text []byte) (any, bool) {
	r := jsonread.New(text)
	var v any
	return v, r.Value(&v) && r.End()
}

func readRaw(text []byte) ([]byte, bool) {
	r := jsonread.New(text)
	var raw []byte
	return raw, r.Raw(&raw) && r.End()
}

func readPlan(text []byte) (*engine.RoutingPlan, bool) {
	r := jsonread.New(text)
	var p *engine.RoutingPlan
	return p, engine.ReadPlan(r, &p) && r.End()
}

const plan = `{"plan_id":"p-1","original_request":"Quote ACME","mode":"autonomous",
 "steps":[{"step_id":"s1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote",
   "metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME","n":[1,2.5,-3e2,true,null,{}]}}},
  {"step_id":"s2","agent_name":"a","namespace":"n","instruction":"","depends_on":["s1"],"implicit_deps":[]}],
 "created_at":"2025-01-02T03:04:05.5+02:00","terminal":false,"continuation_note":"next","phase_number":2}`

// TestReader_FastPath lists texts the fast path must take, giving encoding/json's value.
func TestReader_FastPath(t *testing.T) {
	for name, text := range map[string]string{
		"a plan":                         plan,
		"nulls leave fields zero":        `{"plan_id":null,"steps":null,"created_at":null,"terminal":null,"phase_number":null}`,
		"empty steps stay non-nil":       `{"steps":[]}`,
		"escapes":                        `{"plan_id":"a\"b\\c\/d\b\f\n\r\t\u00e9\u20ac","original_request":"\u0000x"}`,
		"multi-byte UTF-8":               `{"plan_id":"日本語","steps":[{"step_id":"ü","metadata":{"😀":"ø"}}]}`,
		"duplicate metadata keys":        `{"steps":[{"metadata":{"a":1,"a":2}}]}`,
		"whitespace everywhere":          " \t\n{ \"plan_id\" : \"p\" , \"steps\" : [ ] } \r\n",
		"numbers as encoding/json reads": `{"steps":[{"metadata":{"a":0,"b":-0,"c":1e308,"d":5e-324,"e":1E+2,"f":0.000001}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := readPlan([]byte(text))
			if !ok {
				t.Fatalf("left the fast path: %s", text)
			}
			var want *engine.RoutingPlan
			if !viaEncodingJSON([]byte(text), &want) {
				t.Fatalf("encoding/json refuses what the fast path took: %s", text)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("fast path %#v\nencoding/json %#v", got, want)
			}
		})
	}
}

// TestReader_LeavesTheSubset lists texts the fast path must hand to encoding/json,
// keyed by why.
func TestReader_LeavesTheSubset(t *testing.T) {
	for why, text := range map[string]string{
		"syntax error":               `{"plan_id":"p",}`,
		"unknown field":              `{"plan_id":"p","owner":"me"}`,
		"key in another letter case": `{"Plan_ID":"p"}`,
		"escaped key":                `{"plan\u005fid":"p"}`,
		"duplicate field":            `{"plan_id":"a","plan_id":"b"}`,
		"needs_user_input":           `{"needs_user_input":{"question":"?"}}`,
		"escaped surrogate pair":     `{"plan_id":"\ud83d\ude00"}`,
		"lone surrogate":             `{"plan_id":"\ud800"}`,
		"invalid UTF-8":              "{\"plan_id\":\"caf\xe9\"}",
		"control character":          "{\"plan_id\":\"a\x01\"}",
		"number out of range":        `{"steps":[{"metadata":{"n":1e400}}]}`,
		"fraction into an int":       `{"phase_number":1.0}`,
		"int overflow":               `{"phase_number":9223372036854775808}`,
		"leading zero":               `{"phase_number":01}`,
		"bad time":                   `{"created_at":"yesterday"}`,
		"time as a number":           `{"created_at":5}`,
		"null step":                  `{"steps":[null]}`,
		"null in depends_on":         `{"steps":[{"depends_on":[null]}]}`,
		"trailing value":             `{"plan_id":"p"} {}`,
		"trailing brace":             `{"plan_id":"p"}}`,
		"deep nesting":               `{"steps":[{"metadata":{"a":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}]}`,
		"truncated":                  `{"plan_id":"p"`,
		"empty":                      ``,
	} {
		t.Run(why, func(t *testing.T) {
			if _, ok := readPlan([]byte(text)); ok {
				t.Fatalf("the fast path took %q", text)
			}
		})
	}
}

// The oracle refuses what follows a value, stray brackets included.
func TestViaEncodingJSON_RefusesTrailingData(t *testing.T) {
	for _, text := range []string{`{} x`, `{}}`, `{}]`, `{} {}`} {
		var v any
		if viaEncodingJSON([]byte(text), &v) {
			t.Errorf("took %q", text)
		}
	}
}

// Time reads a string after whitespace as encoding/json does; Trailing finds what
// follows a value.
func TestReader_TimeAndTrailing(t *testing.T) {
	var at time.Time
	if r := jsonread.New([]byte(" \n\"2025-01-02T03:04:05Z\" ")); !r.Time(&at) || !r.End() || at.Year() != 2025 {
		t.Fatalf("Time after whitespace: %v", at)
	}
	for text, want := range map[string]int{`{}`: -1, "{} \t\n": -1, `{}}`: 2, "{}  x": 4, `{} {}`: 3} {
		if got := jsonread.Trailing([]byte(text), 2); got != want {
			t.Errorf("Trailing(%q) = %d, want %d", text, got, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Struct took 65 names")
		}
	}()
	jsonread.New([]byte(`{}`)).Struct(make([]string, 65), func(int) bool { return true })
}

// Fields panics when a reader's names are not its type's.
func TestFields(t *testing.T) {
	type wire struct {
		A    string `json:"a"`
		B    int    `json:"b,omitempty"`
		Skip bool   `json:"-"`
		Left []int  `json:"left"`
		C    any
	}
	if got := jsonread.Fields[wire]([]string{"a", "b", "C"}, "left"); len(got) != 3 {
		t.Fatal(got)
	}
	for _, want := range [][]string{{"a", "b"}, {"b", "a", "C"}, {"a", "b", "C", "left"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Fields took %v", want)
				}
			}()
			jsonread.Fields[wire](want, "left")
		}()
	}
}

// FuzzReader_AgreesWithEncodingJSON holds the fast path to its contract: whatever it
// takes, encoding/json takes too and decodes to the same value, both as a plan and as
// an interface.
func FuzzReader_AgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		plan, `{"steps":[]}`, `{"steps":[{"metadata":{"a":1,"a":[{}]}}]}`, `[1,"x",null,true,{"k":-0.5e-3}]`,
		`"\u00e9\ud83d\ude00"`, `{"phase_number":-0}`, `{"created_at":"2025-01-02T03:04:05Z"}`, `1e400`,
		"{\"plan_id\":\"caf\xe9\"}", `{"Plan_id":"p"}`, ` 0 `, `{"a":1}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		if got, ok := readValue(text); ok {
			var want any
			if !viaEncodingJSON(text, &want) {
				t.Fatalf("encoding/json refuses what the fast path took as a value: %q", text)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: fast path %#v, encoding/json %#v", text, got, want)
			}
		}
		if got, ok := readRaw(text); ok {
			var want json.RawMessage
			if !viaEncodingJSON(text, &want) || !bytes.Equal(got, want) {
				t.Fatalf("%q: fast path took %q as raw, encoding/json %q", text, got, want)
			}
		}
		if got, ok := readPlan(text); ok {
			var want *engine.RoutingPlan
			if !viaEncodingJSON(text, &want) {
				t.Fatalf("encoding/json refuses what the fast path took as a plan: %q", text)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: fast path %#v, encoding/json %#v", text, got, want)
			}
		}
	})
}
