package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FoldName is the form two JSON member names share when encoding/json takes them for
// the same name (it matches member names to struct fields without regard to case):
// ASCII letters without case, and every other rune as the least rune of its Unicode
// simple case folding orbit (so "ſ" is "s", "K" (Kelvin) is "k", while "ı" is only
// itself). A name in lower-case ASCII, the common case, is its own form.
func FoldName(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' || c >= utf8.RuneSelf {
			var b strings.Builder
			for _, r := range name {
				if r = leastInOrbit(r); r < utf8.RuneSelf {
					r = unicode.ToLower(r)
				}
				b.WriteRune(r)
			}
			return b.String()
		}
	}
	return name
}

// leastInOrbit returns the least rune that simple case folding reaches from r.
func leastInOrbit(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// AmbiguousMember finds, in v or any object nested in it (map[string]any, []any), two
// member names that FoldName takes for one: an object a reader could take a different
// member of than its reviewer did (encoding/json matches a struct field without regard
// to case, another client exactly). It returns the two names, or ok false when there
// are none. An object whose names are all their own fold is checked without
// allocating.
func AmbiguousMember(v any) (a, b string, ok bool) {
	switch v := v.(type) {
	case map[string]any:
		folded := false
		for k, x := range v {
			if a, b, ok := AmbiguousMember(x); ok {
				return a, b, true
			}
			folded = folded || FoldName(k) != k
		}
		if !folded {
			return "", "", false // distinct names that are their own forms never meet
		}
		seen := make(map[string]string, len(v))
		for k := range v {
			f := FoldName(k)
			if prev, dup := seen[f]; dup {
				return min(prev, k), max(prev, k), true
			}
			seen[f] = k
		}
	case []any:
		for _, x := range v {
			if a, b, ok := AmbiguousMember(x); ok {
				return a, b, true
			}
		}
	}
	return "", "", false
}

// RepeatedMember finds, in the JSON document data, an object that repeats a member
// name exactly, which decoding into a map hides (the last one wins, where another
// reader keeps the first). It returns the name, or ok false when no object repeats one
// or data is not JSON. Names that differ by case are AmbiguousMember's to find.
func RepeatedMember(data []byte) (name string, ok bool) {
	type object struct {
		names     map[string]bool
		expectKey bool
	}
	var stack []*object // nil for an array
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &object{names: map[string]bool{}, expectKey: true})
				continue
			case '[':
				stack = append(stack, nil)
				continue
			}
			stack = stack[:len(stack)-1] // a container ends: a value of its parent
			if top = nil; len(stack) > 0 {
				top = stack[len(stack)-1]
			}
		case string:
			if top != nil && top.expectKey {
				if top.names[t] {
					return t, true
				}
				top.names[t], top.expectKey = true, false
				continue
			}
		}
		if top != nil { // a value ended: the object's next token is a name
			top.expectKey = true
		}
	}
}
