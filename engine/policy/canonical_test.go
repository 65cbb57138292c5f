package policy

import (
	"bytes"
	"encoding/json"
	"testing"
)

func encodeCanon(t *testing.T, v any) []byte {
	t.Helper()
	c := &canon{}
	if err := c.value(v); err != nil {
		t.Fatal(err)
	}
	return c.buf
}

// FuzzCanon_AgreesWithJSON: two JSON values get the same canonical encoding exactly
// when encoding/json renders them the same (sorted keys, shortest numbers), so a memo
// key can never merge two inputs Rego tells apart.
func FuzzCanon_AgreesWithJSON(f *testing.F) {
	seeds := [][2]string{
		{`{"a":"bc"}`, `{"ab":"c"}`},
		{`["a","b"]`, `["ab"]`},
		{`{"x":[1,2]}`, `{"x":[1,2.0]}`},
		{`{"a":null}`, `{}`},
		{`[[],[]]`, `[[[]]]`},
		{`{"k":"1"}`, `{"k":1}`},
		{`1e400`, `1`},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var va, vb any
		if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
			return
		}
		ja, _ := json.Marshal(va)
		jb, _ := json.Marshal(vb)
		ca, cb := encodeCanon(t, va), encodeCanon(t, vb)
		if bytes.Equal(ja, jb) != bytes.Equal(ca, cb) {
			t.Fatalf("json equal %v but canonical equal %v for %s and %s", bytes.Equal(ja, jb), bytes.Equal(ca, cb), ja, jb)
		}
	})
}
