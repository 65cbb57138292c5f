package openai

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/engine/jsonread"
)

// A client's body and an upstream's reply are decoded on every round. The readers here
// decode the texts in jsonread's subset without reflection, into exactly what
// encoding/json decodes; on anything else (a member they read given twice or spelled
// in another case, an escaped member name, a value of another type) they report false
// and encoding/json decodes the text, giving its own value or error. What is vetted of
// the text (vetMembers) is vetted either way.

// Member names the readers read, in the order of their structs' fields.
var (
	completionNames   = []string{"id", "created", "model", "system_fingerprint", "usage", "choices"}
	choiceNames       = []string{"message", "finish_reason"}
	replyMessageNames = []string{"content", "refusal", "tool_calls", "function_call"}
	messageNames      = []string{"role", "content", "tool_calls", "tool_call_id"}
	toolCallNames     = []string{"id", "type", "function"}
	functionNames     = []string{"name", "arguments"}
	usageNames        = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"}
	detailsNames      = []string{"cached_tokens", "audio_tokens", "reasoning_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens"}
)

// decodeCompletion decodes a non-streamed chat completion as encoding/json does.
func decodeCompletion(data []byte) (completionWire, error) {
	var w completionWire
	if r := jsonread.New(data); readCompletion(r, &w) && r.End() {
		return w, nil
	}
	w = completionWire{}
	err := json.Unmarshal(data, &w)
	return w, err
}

func readCompletion(r *jsonread.Reader, w *completionWire) bool {
	return readObject(r, completionNames, func(i int) bool {
		switch i {
		case 0:
			return r.Null() || r.String(&w.ID)
		case 1:
			var n int
			ok := r.Null() || r.Int(&n)
			w.Created = int64(n)
			return ok
		case 2:
			return r.Null() || r.String(&w.Model)
		case 3:
			return r.Null() || r.String(&w.SystemFingerprint)
		case 4:
			return r.Raw((*[]byte)(&w.Usage))
		}
		if r.Null() {
			return true
		}
		w.Choices = []choiceWire{}
		return r.Array(func() bool {
			w.Choices = append(w.Choices, choiceWire{})
			return readChoice(r, &w.Choices[len(w.Choices)-1])
		})
	})
}

func readChoice(r *jsonread.Reader, c *choiceWire) bool {
	return readObject(r, choiceNames, func(i int) bool {
		if i == 1 {
			return readStringPointer(r, &c.FinishReason)
		}
		if r.Null() {
			return true
		}
		c.Message = &replyMessageWire{}
		m := c.Message
		return readObject(r, replyMessageNames, func(i int) bool {
			switch i {
			case 0:
				return readStringPointer(r, &m.Content)
			case 1:
				return readStringPointer(r, &m.Refusal)
			case 2:
				return readToolCalls(r, &m.ToolCalls)
			}
			return r.Raw((*[]byte)(&m.FunctionCall))
		})
	})
}

// decodeUsage decodes an upstream's usage as encoding/json does; ok is false when it
// does not decode.
func decodeUsage(raw []byte) (u usageWire, ok bool) {
	if r := jsonread.New(raw); readUsage(r, &u) && r.End() {
		return u, true
	}
	u = usageWire{}
	return u, json.Unmarshal(raw, &u) == nil
}

func readUsage(r *jsonread.Reader, u *usageWire) bool {
	counts := [...]**int64{&u.PromptTokens, &u.CompletionTokens, &u.TotalTokens}
	return readObject(r, usageNames, func(i int) bool {
		if i < len(counts) {
			return readCount(r, counts[i])
		}
		if r.Null() {
			return true
		}
		d := &tokenDetails{}
		if i == 3 {
			u.PromptTokensDetails = d
		} else {
			u.CompletionTokensDetails = d
		}
		counts := [...]**int64{&d.CachedTokens, &d.AudioTokens, &d.ReasoningTokens, &d.AcceptedPredictionTokens, &d.RejectedPredictionTokens}
		return readObject(r, detailsNames, func(i int) bool { return readCount(r, counts[i]) })
	})
}

// readCount reads an integer into a new *dst; null leaves *dst nil.
func readCount(r *jsonread.Reader, dst **int64) bool {
	if r.Null() {
		return true
	}
	var n int
	if !r.Int(&n) {
		return false
	}
	v := int64(n)
	*dst = &v
	return true
}

// readRequest reads a client's body into req: its members, as slices of body, and its
// messages. A member given twice is outside the subset (a map keeps the last).
func readRequest(body []byte, req *chatRequest) bool {
	fields := map[string]json.RawMessage{}
	r := jsonread.New(body)
	ok := r.Object(func(key []byte) bool {
		if _, twice := fields[string(key)]; twice {
			return false
		}
		var raw []byte
		ok := r.Raw(&raw)
		fields[string(key)] = raw
		return ok
	})
	if !ok || !r.End() {
		return false
	}
	msgs, ok := readMessages(fields["messages"])
	if ok {
		req.fields, req.messages = fields, msgs
	}
	return ok
}

// readMessages reads a non-empty array of chat messages, each with its text as raw.
func readMessages(data []byte) ([]message, bool) {
	var msgs []message
	r := jsonread.New(data)
	ok := r.Array(func() bool {
		var m message
		if !r.Raw((*[]byte)(&m.raw)) {
			return false
		}
		mr := jsonread.New(m.raw)
		msgs = append(msgs, m)
		return readMessage(mr, &msgs[len(msgs)-1]) && mr.End()
	})
	return msgs, ok && r.End() && len(msgs) > 0
}

func readMessage(r *jsonread.Reader, m *message) bool {
	return readObject(r, messageNames, func(i int) bool {
		switch i {
		case 0:
			return r.Null() || r.String(&m.Role)
		case 1:
			return r.Raw((*[]byte)(&m.Content))
		case 2:
			return readToolCalls(r, &m.ToolCalls)
		}
		return r.Null() || r.String(&m.ToolCallID)
	})
}

func readToolCalls(r *jsonread.Reader, dst *[]toolCall) bool {
	if r.Null() {
		return true
	}
	calls := []toolCall{}
	ok := r.Array(func() bool {
		calls = append(calls, toolCall{})
		c := &calls[len(calls)-1]
		return readObject(r, toolCallNames, func(i int) bool {
			switch i {
			case 0:
				return r.Null() || r.String(&c.ID)
			case 1:
				return r.Null() || r.String(&c.Type)
			}
			return r.Null() || readObject(r, functionNames, func(i int) bool {
				if i == 0 {
					return r.Null() || r.String(&c.Function.Name)
				}
				return r.Null() || r.String(&c.Function.Arguments)
			})
		})
	})
	*dst = calls
	return ok
}

// readStringPointer reads a string into a new *dst; null leaves *dst nil.
func readStringPointer(r *jsonread.Reader, dst **string) bool {
	if r.Null() {
		return true
	}
	*dst = new(string)
	return r.String(*dst)
}

// readObject reads an object into a struct at its zero value whose JSON field names are
// names (lower case ASCII), calling field with the index of each of its members to
// read the value, null included (as encoding/json: a field left as it is, a pointer
// or slice nil, a json.RawMessage "null"), and skipping the other members. A member of
// names given twice, or one that encoding/json could match to one of names though it
// is spelled otherwise (it matches names without regard to case, and some names
// outside ASCII too), is outside the subset.
func readObject(r *jsonread.Reader, names []string, field func(i int) bool) bool {
	var seen uint64
	return r.Object(func(key []byte) bool {
		i := nameIndex(names, key)
		switch {
		case i < 0 && mayMatch(names, key):
			return false
		case i < 0:
			var skipped []byte
			return r.Raw(&skipped)
		case seen&(1<<i) != 0:
			return false
		}
		seen |= 1 << i
		return field(i)
	})
}

func nameIndex(names []string, key []byte) int {
	for i, name := range names {
		if string(key) == name {
			return i
		}
	}
	return -1
}

// mayMatch reports whether encoding/json could match key to one of names (lower case
// ASCII) though it is none of them: any key with an upper case letter that is one of
// names but for case, and any key outside ASCII.
func mayMatch(names []string, key []byte) bool {
	upper := false
	for _, c := range key {
		switch {
		case c >= utf8.RuneSelf:
			return true
		case 'A' <= c && c <= 'Z':
			upper = true
		}
	}
	if !upper {
		return false
	}
	for _, name := range names {
		if len(name) == len(key) && equalFoldASCII(name, key) {
			return true
		}
	}
	return false
}

func equalFoldASCII(name string, key []byte) bool {
	for i := range key {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// readOptional reads an optional member of a client's body into v when v is a *bool, a
// *string or a *map[string]any (a new map) and the value is of its type; v is left as
// it is otherwise.
func readOptional(raw []byte, v any) bool {
	r := jsonread.New(raw)
	switch v := v.(type) {
	case *bool:
		var b bool
		if r.Bool(&b) && r.End() {
			*v = b
			return true
		}
	case *string:
		var s string
		if r.String(&s) && r.End() {
			*v = s
			return true
		}
	case *map[string]any:
		var m map[string]any
		if r.Map(&m) && r.End() {
			*v = m
			return true
		}
	}
	return false
}
