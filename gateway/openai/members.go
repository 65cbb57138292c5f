package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentd-dev/agentd/engine"
)

// memberRules say which member names of a JSON document the gateway reads: in an
// object where they apply, a member whose name folds to a read name must be spelled
// as it (see vetMembers).
type memberRules struct {
	// read maps the folded form of each member name the gateway reads to its spelling.
	read map[string]string
	// scope, when set, confines read to the root object and the subtree of its member
	// named scope: the rest of the document (a client's tool schemas, its metadata) is
	// the client's own, checked for repeated names only.
	scope string
}

func readNames(names ...string) map[string]string {
	m := make(map[string]string, len(names))
	for _, name := range names {
		m[engine.FoldName(name)] = name
	}
	return m
}

// Member rules of what the gateway reads: an upstream reply or chunk, a client's
// chat-completions body (its top-level members and its messages), and a tool call's
// arguments (read as a whole: any names, none repeated or folding together).
var (
	replyMembers = memberRules{read: readNames("choices", "message", "delta", "content", "refusal", "tool_calls",
		"function_call", "finish_reason", "function", "name", "arguments", "id", "type", "index", "error", "usage",
		"created", "model", "system_fingerprint")}
	requestMembers = memberRules{scope: "messages", read: readNames("messages", "role", "content", "tool_calls",
		"tool_call_id", "type", "text", "function", "name", "arguments", "id", "stream", "model", "user", "metadata", "n")}
	argumentMembers = memberRules{}
)

// vetMembers refuses a document that a reader could take differently from the
// gateway. encoding/json matches member names without regard to case and keeps the
// last of repeated ones, while clients in other languages match names exactly (and
// some keep the first): in an object with two members whose names fold together
// (engine.FoldName), or with a member the gateway reads (rules) spelled in another
// case, the review could see one thing and the client or the upstream act on another
// (a tool call the review never saw, an amount the guard never checked, the text a
// redaction replaced). Such a document is refused, whatever else it holds.
//
// data must be valid JSON (the caller has decoded it already): vetMembers scans it
// once, reading only its structure and member names.
func vetMembers(data []byte, rules memberRules) error {
	type frame struct {
		object    int // -1 for an array
		expectKey bool
		strict    bool   // rules.read applies to the object's members
		key       string // the member being read, in the root object
	}
	var (
		frames  [32]frame // the stack of most documents, unallocated
		stack   = frames[:0]
		names   = memberMaps.Get().(map[member]string) // -> the name as sent
		objects int
	)
	defer func() {
		if len(names) <= maxPooledMembers {
			clear(names)
			memberMaps.Put(names)
		}
	}()
	strict := func() bool { // whether a container opening now is in the rules' scope
		switch len(stack) {
		case 0:
			return true
		case 1:
			return rules.scope == "" || stack[0].key == rules.scope
		}
		return stack[len(stack)-1].strict
	}
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{':
			stack = append(stack, frame{object: objects, expectKey: true, strict: strict()})
			objects++
		case '[':
			stack = append(stack, frame{object: -1, strict: strict()})
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
				key := member{stack[top].object, engine.FoldName(name)}
				if prev, seen := names[key]; seen {
					return fmt.Errorf("members %q and %q of one object have the same name but for case, or repeat", prev, name)
				}
				if read, ok := rules.read[key.name]; ok && read != name && stack[top].strict {
					return fmt.Errorf("member %q is %q spelled in another case", name, read)
				}
				names[key] = name
				if top == 0 {
					stack[0].key = name
				}
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
