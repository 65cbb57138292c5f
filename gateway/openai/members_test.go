package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// FuzzVetMembers checks vetMembers' one-pass scan against a reading of the same JSON
// through encoding/json's tokenizer, under the rules of each document the gateway
// vets (upstream replies, client bodies, tool call arguments): on every valid
// document both find the same problem (a repeated or case-folded member name, a read
// member in another case where the rules read it) or none.
func FuzzVetMembers(f *testing.F) {
	for _, seed := range []string{
		toolRound,
		`{"choices":[],"Choices":[]}`, `{"a":1,"a":2}`, `{"x":{"a":1},"y":{"a":1}}`, `[{"a":1},{"a":1}]`,
		`{"Tool_Calls":[]}`, `{"\u0041":1,"a":2}`, `{"k":1,"\u212a":2}`, `{"a\"b":{"c":"\"{"}}`,
		`{"s":"}","t":[1,"]",{"u":"\\"}]}`, `"x"`, `1`, `{}`,
		`{"amount":5,"Amount":50000}`, `{"amount":5,"amount":50000}`,
		`{"messages":[{"role":"user","Content":"x"}]}`, `{"messages":[{"role":"user","content":[{"type":"text","Text":"x"}]}]}`,
		`{"tools":[{"type":"function","function":{"parameters":{"properties":{"Name":{}}}}}],"messages":[]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		for name, rules := range map[string]memberRules{"reply": replyMembers, "request": requestMembers, "arguments": argumentMembers} {
			got, want := vetMembers(data, rules), membersByTokens(t, data, rules)
			if (got != nil) != want {
				t.Fatalf("%s rules: vetMembers(%s) = %v; the tokenizer finds a problem: %v", name, data, got, want)
			}
		}
		// Arguments the gateway accepts are parameters the engine admits: its check of
		// the decoded object agrees.
		if args, err := parseArguments(string(data)); err == nil {
			if a, b, ambiguous := engine.AmbiguousMember(args); ambiguous {
				t.Fatalf("parseArguments(%s) accepted members %q and %q", data, a, b)
			}
		}
	})
}

// membersByTokens reports whether some object of data has two members whose names
// fold together or a member the rules read spelled in another case, in an object
// where they apply.
func membersByTokens(t *testing.T, data []byte, rules memberRules) bool {
	type object struct {
		names     map[string]bool
		expectKey bool
		strict    bool
		key       string
	}
	type frame struct {
		obj    *object // nil for an array
		strict bool
	}
	var stack []frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].obj != nil {
			stack[n-1].obj.expectKey = true
		}
	}
	strict := func() bool {
		switch len(stack) {
		case 0:
			return true
		case 1:
			return rules.scope == "" || stack[0].obj != nil && stack[0].obj.key == rules.scope
		}
		return stack[len(stack)-1].strict
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a number too large for a float64 is still valid JSON
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			t.Fatalf("tokenizing valid JSON: %v", err)
		}
		if n := len(stack); n > 0 && stack[n-1].obj != nil && stack[n-1].obj.expectKey {
			o := stack[n-1].obj
			name, ok := tok.(string)
			if !ok {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			f := engine.FoldName(name)
			if read, known := rules.read[f]; o.names[f] || known && read != name && o.strict {
				return true
			}
			o.names[f], o.expectKey, o.key = true, false, name
			continue
		}
		switch tok {
		case json.Delim('{'):
			st := strict()
			stack = append(stack, frame{obj: &object{names: map[string]bool{}, expectKey: true, strict: st}, strict: st})
		case json.Delim('['):
			stack = append(stack, frame{strict: strict()})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// engine.FoldName relates two names exactly when encoding/json decodes a member named one into a
// field tagged with the other.
func TestFold_RelatesWhatEncodingJSONMatches(t *testing.T) {
	names := []string{"id", "ID", "Id", "ıd", "İd", "index", "İndex", "INDEX", "key", "\u212aey", "KEY", "choices",
		"choiceſ", "CHOICES", "straße", "STRASSE", "straſſe", "σς", "ΣΣ", "σσ", "é", "É", "e\u0301"}
	for _, tag := range names {
		typ := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[int](), Tag: reflect.StructTag(`json:"` + tag + `"`)}})
		matches := func(member string) bool {
			v := reflect.New(typ)
			if err := json.Unmarshal([]byte(`{"`+member+`":1}`), v.Interface()); err != nil {
				t.Fatal(err)
			}
			return v.Elem().Field(0).Int() == 1
		}
		if !matches(tag) {
			continue // not a name a tag can give (a combining mark)
		}
		for _, member := range names {
			matched := matches(member)
			if related := engine.FoldName(member) == engine.FoldName(tag); related != matched {
				t.Errorf("member %+q, field %+q: encoding/json matches: %v, fold relates: %v", member, tag, matched, related)
			}
		}
	}
}
