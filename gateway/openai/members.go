package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// readMembers maps the folded form of each member name the gateway reads of an
// upstream reply or chunk to its spelling.
var readMembers = func() map[string]string {
	m := map[string]string{}
	for _, name := range []string{"choices", "message", "delta", "content", "refusal", "tool_calls", "function_call",
		"finish_reason", "function", "name", "arguments", "id", "type", "index", "error", "usage",
		"created", "model", "system_fingerprint"} {
		m[fold(name)] = name
	}
	return m
}()

// vetMembers refuses a reply that a client could read differently from the gateway.
// encoding/json matches member names without regard to case and keeps the last of
// repeated ones, while clients in other languages match names exactly (and some keep
// the first): in an object with two members whose names fold together, or with a
// member the gateway reads spelled in another case, the review could see one answer
// and the client act on another (a tool call the review never saw, or the text a
// redaction replaced). Such a reply is malformed, whatever else it holds.
//
// data must be valid JSON (the caller has decoded it already): vetMembers scans it
// once, reading only its structure and member names.
func vetMembers(data []byte) error {
	type frame struct {
		object    int // -1 for an array
		expectKey bool
	}
	var (
		stack   []frame
		names   = memberMaps.Get().(map[member]string) // -> the name as sent
		objects int
	)
	defer func() {
		if len(names) <= maxPooledMembers {
			clear(names)
			memberMaps.Put(names)
		}
	}()
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{':
			stack = append(stack, frame{object: objects, expectKey: true})
			objects++
		case '[':
			stack = append(stack, frame{object: -1})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; top.object >= 0 {
				top.expectKey = true
			}
		case '"':
			end := stringEnd(data, i)
			if top := len(stack) - 1; top >= 0 && stack[top].expectKey {
				stack[top].expectKey = false
				name, err := memberName(data[i : end+1])
				if err != nil {
					return err
				}
				key := member{stack[top].object, fold(name)}
				if prev, seen := names[key]; seen {
					return fmt.Errorf("members %q and %q of one object have the same name but for case, or repeat", prev, name)
				}
				if read, ok := readMembers[key.name]; ok && read != name {
					return fmt.Errorf("member %q is %q spelled in another case", name, read)
				}
				names[key] = name
			}
			i = end
		}
	}
	return nil
}

// member is a member name of one object of a reply, folded.
type member struct {
	object int // which object, numbered as they open
	name   string
}

// memberMaps recycles vetMembers' maps, up to maxPooledMembers members: a reply is
// vetted on every round, and growing a map for it was most of the cost.
var memberMaps = sync.Pool{New: func() any { return map[member]string{} }}

const maxPooledMembers = 1024

// stringEnd returns the index of the quote closing the JSON string opening at start.
func stringEnd(data []byte, start int) int {
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(data) - 1
}

// memberName decodes a quoted member name, without allocating when it has no escapes.
func memberName(quoted []byte) (string, error) {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1 : len(quoted)-1]), nil
	}
	var name string
	err := json.Unmarshal(quoted, &name)
	return name, err
}

// fold is the form two names share when encoding/json takes them for the same member
// name: ASCII letters without case, and every other rune as the least rune of its
// Unicode simple case folding orbit (so "ſ" is "s", "K" (Kelvin) is "k", while "ı" is
// only itself). Names in lower-case ASCII, the common case, are their own form.
func fold(name string) string {
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
