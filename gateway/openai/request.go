package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/jsonread"
)

// chatRequest is a client's chat-completions body. Every top-level member is kept and
// forwarded to the upstream as sent; only messages change (see withSystem).
type chatRequest struct {
	fields   map[string]json.RawMessage
	messages []message
	stream   bool
	model    string
	user     string
	metadata map[string]any
}

// message is one chat message as the gateway reads it; raw is the message as sent.
type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []toolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	raw        json.RawMessage
}

// toolCall is one tool call of an assistant message or an upstream reply.
type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// isFunction reports whether the call is a function call (the only kind the gateway
// maps; an absent type is taken as one).
func (c toolCall) isFunction() bool { return c.Type == "" || c.Type == "function" }

// roles a chat message may have. The legacy "function" role is not accepted: its
// results cannot be tied to a reviewed call.
var roles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// readBody reads at most limit bytes of a JSON body of size bytes (-1: unknown); a
// larger body is a 413, one that is not valid UTF-8 a 400.
func readBody(r io.Reader, size, limit int64) ([]byte, *apiError) {
	data, err := readUpTo(r, size, limit)
	if int64(len(data)) > limit {
		e := newError(http.StatusRequestEntityTooLarge, typeInvalidRequest, codeBodyTooLarge, "request body exceeds %d bytes", limit)
		return nil, e
	}
	if err != nil {
		return nil, badRequest(codeInvalidJSON, "", "read request body: %v", err)
	}
	if !utf8.Valid(data) {
		return nil, badRequest(codeInvalidJSON, "", "request body is not valid UTF-8")
	}
	return data, nil
}

// parseRequest decodes and checks a chat-completions body: a JSON object with a
// non-empty messages array of known roles, at most one choice (n), and well-formed
// tool calls and tool results. A body with repeated member names, or names that fold
// together, or a member the gateway reads spelled in another case (see vetMembers,
// requestMembers) is refused: the messages are forwarded as sent, so the upstream must
// read in them exactly what the review read.
func parseRequest(body []byte) (*chatRequest, *apiError) {
	req := &chatRequest{}
	fast := readRequest(body, req)
	if !fast && (json.Unmarshal(body, &req.fields) != nil || req.fields == nil) {
		return nil, badRequest(codeInvalidJSON, "", "request body must be a JSON object")
	}
	if err := vetMembers(body, requestMembers); err != nil {
		return nil, badRequest(codeAmbiguousMembers, "", "the request body is ambiguous: %v", err)
	}
	if fast {
		for i, m := range req.messages {
			if e := checkMessage(m, messageParam(i)); e != nil {
				return nil, e
			}
		}
	} else if e := req.parseMessages(); e != nil {
		return nil, e
	}
	if e := optional(req.fields, "stream", &req.stream); e != nil {
		return nil, e
	}
	if e := optional(req.fields, "model", &req.model); e != nil {
		return nil, e
	}
	if e := optional(req.fields, "user", &req.user); e != nil {
		return nil, e
	}
	if e := optional(req.fields, "metadata", &req.metadata); e != nil {
		return nil, e
	}
	var n *int
	if e := optional(req.fields, "n", &n); e != nil {
		return nil, e
	}
	if n != nil && *n != 1 {
		return nil, badRequest(codeInvalidField, "n", "n must be 1: the gateway reviews one choice per round")
	}
	return req, nil
}

// optional decodes member key of fields into v when it is present and not null.
func optional(fields map[string]json.RawMessage, key string, v any) *apiError {
	raw, ok := fields[key]
	if !ok || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if !readOptional(raw, v) && json.Unmarshal(raw, v) != nil {
		return badRequest(codeInvalidField, key, "%s has the wrong type: %s", key, typeOf(raw))
	}
	return nil
}

// parseMessages decodes and checks the body's messages, one after the other.
func (r *chatRequest) parseMessages() *apiError {
	var msgs []json.RawMessage
	if err := json.Unmarshal(r.fields["messages"], &msgs); err != nil || len(msgs) == 0 {
		return badRequest(codeInvalidMessages, "messages", "messages must be a non-empty array of messages")
	}
	for i, raw := range msgs {
		param := messageParam(i)
		m := message{raw: raw}
		if err := json.Unmarshal(raw, &m); err != nil {
			return badRequest(codeInvalidMessages, param, "%s must be a message object with a string role: %v", param, err)
		}
		if e := checkMessage(m, param); e != nil {
			return e
		}
		r.messages = append(r.messages, m)
	}
	return nil
}

func messageParam(i int) string { return "messages[" + strconv.Itoa(i) + "]" }

// checkMessage checks a decoded message: a known role, content as text() reads it,
// tool calls with ids and function names, and a tool message's tool_call_id.
func checkMessage(m message, param string) *apiError {
	if !roles[m.Role] {
		return badRequest(codeInvalidMessages, param+".role", "%s has role %q; roles are system, developer, user, assistant and tool", param, m.Role)
	}
	if _, ok := text(m.Content); !ok {
		return badRequest(codeInvalidMessages, param+".content", "%s content must be a string, an array of content parts or null", param)
	}
	for j, c := range m.ToolCalls {
		if c.ID == "" || c.isFunction() && c.Function.Name == "" {
			return badRequest(codeInvalidMessages, param+".tool_calls["+strconv.Itoa(j)+"]", "a tool call needs an id and a function name")
		}
	}
	if m.Role == "tool" && m.ToolCallID == "" {
		return badRequest(codeInvalidMessages, param+".tool_call_id", "a tool message needs the tool_call_id it answers")
	}
	return nil
}

// text returns the text of message content: a string, the text parts of a content
// array joined by newlines (other parts carry no text), or "" for null and absent.
// ok is false for any other JSON.
func text(content json.RawMessage) (string, bool) {
	if len(content) == 0 || bytes.Equal(content, []byte("null")) {
		return "", true
	}
	var s string
	if r := jsonread.New(content); r.String(&s) && r.End() || json.Unmarshal(content, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return "", false
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), true
}

// withSystem returns the body to forward upstream: the client's members as sent, with
// a system message of text (none for "") among the messages, after the leading system
// and developer messages. It is written in one buffer as encoding/json writes a map of
// the members (names sorted, values compacted, <, >, &, U+2028 and U+2029 escaped):
// a body is forwarded on every round.
func (r *chatRequest) withSystem(text string) ([]byte, error) {
	names := make([]string, 0, len(r.fields))
	size := 64 + 2*len(text)
	for name, v := range r.fields {
		names = append(names, name)
		size += len(name) + len(v) + 4
	}
	slices.Sort(names)
	b := bytes.NewBuffer(make([]byte, 0, size))
	b.WriteByte('{')
	for i, name := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(engine.AppendJSONString(b.AvailableBuffer(), name))
		b.WriteByte(':')
		var err error
		if name == "messages" {
			err = r.writeMessages(b, text)
		} else {
			err = json.Compact(b, r.fields[name])
		}
		if err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	if !needsHTMLEscape(b.Bytes()) {
		return b.Bytes(), nil
	}
	var escaped bytes.Buffer
	json.HTMLEscape(&escaped, b.Bytes())
	return escaped.Bytes(), nil
}

// writeMessages writes the client's messages, compacted, with a system message of text
// (none for "") after the leading system and developer messages.
func (r *chatRequest) writeMessages(b *bytes.Buffer, text string) error {
	lead := 0
	for lead < len(r.messages) && (r.messages[lead].Role == "system" || r.messages[lead].Role == "developer") {
		lead++
	}
	b.WriteByte('[')
	first := b.Len()
	comma := func() {
		if b.Len() > first {
			b.WriteByte(',')
		}
	}
	for i := 0; i <= len(r.messages); i++ {
		if i == lead && text != "" {
			comma()
			b.WriteString(`{"content":`)
			b.Write(engine.AppendJSONString(b.AvailableBuffer(), text))
			b.WriteString(`,"role":"system"}`)
		}
		if i < len(r.messages) {
			comma()
			if err := json.Compact(b, r.messages[i].raw); err != nil {
				return err
			}
		}
	}
	b.WriteByte(']')
	return nil
}

// needsHTMLEscape reports whether compact JSON holds a character encoding/json escapes
// in strings that json.Compact leaves: <, >, &, U+2028 or U+2029.
func needsHTMLEscape(data []byte) bool {
	return bytes.ContainsAny(data, "<>&") || bytes.Contains(data, []byte("\u2028")) || bytes.Contains(data, []byte("\u2029"))
}

// typeOf names the JSON type of raw for an error message.
func typeOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
