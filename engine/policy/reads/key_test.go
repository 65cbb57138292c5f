package reads

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// decodeJSON decodes s with its numbers as written, as Rego inputs keep them.
func decodeJSON(s string) (any, bool) {
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil || d.More() {
		return nil, false
	}
	return v, true
}

// FuzzCanon_AgreesWithJSON: two JSON values get the same canonical encoding exactly
// when encoding/json renders them the same (sorted keys, numbers as written), so a memo
// key read whole can never merge two inputs Rego tells apart.
func FuzzCanon_AgreesWithJSON(f *testing.F) {
	seeds := [][2]string{
		{`{"a":"bc"}`, `{"ab":"c"}`},
		{`["a","b"]`, `["ab"]`},
		{`{"x":[1,2]}`, `{"x":[1,2.0]}`},
		{`{"a":null}`, `{}`},
		{`[[],[]]`, `[[[]]]`},
		{`{"k":"1"}`, `{"k":1}`},
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`1e400`, `1`},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		va, okA := decodeJSON(a)
		vb, okB := decodeJSON(b)
		if !okA || !okB {
			return
		}
		ca, okA := encodeWhole(va)
		cb, okB := encodeWhole(vb)
		if !okA || !okB {
			return // not a Rego value (a number out of range): no input carries it
		}
		ja, _ := json.Marshal(va)
		jb, _ := json.Marshal(vb)
		if bytes.Equal(ja, jb) != bytes.Equal(ca, cb) {
			t.Fatalf("json equal %v but canonical equal %v for %s and %s", bytes.Equal(ja, jb), bytes.Equal(ca, cb), ja, jb)
		}
	})
}

func encodeWhole(v any) ([]byte, bool) {
	av, err := ast.InterfaceToValue(v)
	if err != nil {
		return nil, false
	}
	c := &canon{}
	c.project(av, &readNode{whole: true})
	return c.buf, true
}
