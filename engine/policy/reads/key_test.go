package reads

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strings"
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
	return canon(nil).project(av, &readNode{whole: true}), true
}

// TestKey_LongEncodingsAreDigested: an encoding up to MaxRawKey bytes is its own key;
// a longer one is a zero byte and its SHA-256, and keys still tell apart exactly the
// inputs whose encodings differ, on both sides of the limit.
func TestKey_LongEncodingsAreDigested(t *testing.T) {
	tree := ReadingWhole()
	keyOf := func(s string) string {
		t.Helper()
		v, err := ast.InterfaceToValue(s)
		if err != nil {
			t.Fatal(err)
		}
		return KeyOfValue(tree, v)
	}
	for _, n := range []int{1, MaxRawKey - 3, MaxRawKey - 2, MaxRawKey, 4 * MaxRawKey} {
		text := strings.Repeat("a", n)
		key, other := keyOf(text), keyOf(text[:n-1]+"b")
		c := canon(nil).value(ast.String(text))
		switch long := len(c) > MaxRawKey; {
		case !long && key != string(c):
			t.Errorf("%d bytes: key %q, want the encoding itself", len(c), key)
		case long && (len(key) != 1+sha256.Size || key[0] != 0):
			t.Errorf("%d bytes: key %q, want a zero byte and a SHA-256", len(c), key)
		}
		if key == other || key != keyOf(text) {
			t.Errorf("%d bytes: keys of equal encodings differ or of different ones agree", len(c))
		}
	}
}

// A string is its tag, its length as a uvarint, then its bytes, whichever way it is
// written (text, presentString after tagPresent), on both sides of the one-byte length.
func TestCanon_StringsCarryTheirUvarintLength(t *testing.T) {
	for _, n := range []int{0, 1, 126, 127, 128, 129, 255, 256, 16383, 16384} {
		s := strings.Repeat("s", n)
		want := append(binary.AppendUvarint([]byte{tagString}, uint64(n)), s...)
		if got := canon(nil).text(tagString, s); !bytes.Equal(got, want) {
			t.Errorf("text, %d bytes: %x…, want %x…", n, got[:min(len(got), 4)], want[:min(len(want), 4)])
		}
		if got := canon(nil).presentString(s, &readNode{value: true}); !bytes.Equal(got, append([]byte{tagPresent}, want...)) {
			t.Errorf("presentString, %d bytes: %x…, want %x…", n, got[:min(len(got), 5)], want[:min(len(want), 4)])
		}
	}
}
