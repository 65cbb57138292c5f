package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// FuzzVetMembers checks vetMembers' one-pass scan against a reading of the same JSON
// through encoding/json's tokenizer: on every valid document both find the same
// problem (a repeated or case-folded member name, a read member in another case) or
// none.
func FuzzVetMembers(f *testing.F) {
	for _, seed := range []string{
		toolRound,
		`{"choices":[],"Choices":[]}`, `{"a":1,"a":2}`, `{"x":{"a":1},"y":{"a":1}}`, `[{"a":1},{"a":1}]`,
		`{"Tool_Calls":[]}`, `{"\u0041":1,"a":2}`, `{"k":1,"\u212a":2}`, `{"a\"b":{"c":"\"{"}}`,
		`{"s":"}","t":[1,"]",{"u":"\\"}]}`, `"x"`, `1`, `{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		got, want := vetMembers(data), membersByTokens(t, data)
		if (got != nil) != want {
			t.Fatalf("vetMembers(%s) = %v; the tokenizer finds a problem: %v", data, got, want)
		}
	})
}

// membersByTokens reports whether some object of data has two members whose names
// fold together or a member the gateway reads spelled in another case.
func membersByTokens(t *testing.T, data []byte) bool {
	type object struct {
		names     map[string]bool
		expectKey bool
	}
	var stack []*object // nil for an array
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1] != nil {
			stack[n-1].expectKey = true
		}
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
		if n := len(stack); n > 0 && stack[n-1] != nil && stack[n-1].expectKey {
			name, ok := tok.(string)
			if !ok {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			f := fold(name)
			if read, known := readMembers[f]; stack[n-1].names[f] || known && read != name {
				return true
			}
			stack[n-1].names[f], stack[n-1].expectKey = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &object{names: map[string]bool{}, expectKey: true})
		case json.Delim('['):
			stack = append(stack, nil)
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// fold relates two names exactly when encoding/json decodes a member named one into a
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
			if related := fold(member) == fold(tag); related != matched {
				t.Errorf("member %+q, field %+q: encoding/json matches: %v, fold relates: %v", member, tag, matched, related)
			}
		}
	}
}
