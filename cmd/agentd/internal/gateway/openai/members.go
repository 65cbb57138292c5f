package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// readMembers are the member names the gateway reads of an upstream reply or chunk.
var readMembers = []string{"choices", "message", "delta", "content", "refusal", "tool_calls", "function_call",
	"finish_reason", "function", "name", "arguments", "id", "type", "index", "error", "usage",
	"created", "model", "system_fingerprint"}

// vetMembers refuses a reply that a client could read differently from the gateway.
// encoding/json matches member names without regard to case and keeps the last of
// repeated ones, while clients in other languages match names exactly (and some keep
// the first): in an object with two members whose names fold together, or with a
// member the gateway reads spelled in another case, the review could see one answer
// and the client act on another (a tool call the review never saw, or the text a
// redaction replaced). Such a reply is malformed, whatever else it holds. data is JSON
// the caller has decoded already: a syntax error is reported, not explained.
func vetMembers(data []byte) error {
	type object struct {
		names     map[string]string // folded name -> name as sent
		expectKey bool
	}
	var stack []*object // nil for an array
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1] != nil {
			stack[n-1].expectKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if n := len(stack); n > 0 && stack[n-1] != nil && stack[n-1].expectKey {
			o := stack[n-1]
			name, ok := tok.(string)
			if !ok { // the object's closing brace
				stack = stack[:n-1]
				valueDone()
				continue
			}
			folded := strings.ToLower(strings.ToUpper(name))
			if prev, seen := o.names[folded]; seen {
				return fmt.Errorf("members %q and %q of one object have the same name but for case, or repeat", prev, name)
			}
			for _, m := range readMembers {
				if name != m && strings.EqualFold(name, m) {
					return fmt.Errorf("member %q is %q spelled in another case", name, m)
				}
			}
			o.names[folded], o.expectKey = name, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &object{names: map[string]string{}, expectKey: true})
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
