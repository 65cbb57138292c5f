package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// reply is an upstream answer, streamed or not, as the gateway reviews it.
type reply struct {
	content *string // nil: null
	refusal *string
	calls   []toolCall
	finish  string
	// meta and usage are the reply's (of a streamed reply, its chunks'): the members
	// of the answer the gateway writes that are not the reviewed message, in their
	// shape only (chunkMeta.vetted, vetUsage).
	meta  chunkMeta
	usage json.RawMessage
}

// final reports whether the reply is the answer (no tool calls) rather than a round.
func (r *reply) final() bool { return len(r.calls) == 0 }

// completionWire is what the gateway reads of a non-streamed chat completion.
type completionWire struct {
	chunkMeta
	Usage   json.RawMessage `json:"usage"`
	Choices []choiceWire    `json:"choices"`
}

type choiceWire struct {
	Message      *replyMessageWire `json:"message"`
	FinishReason *string           `json:"finish_reason"`
}

type replyMessageWire struct {
	Content      *string         `json:"content"`
	Refusal      *string         `json:"refusal"`
	ToolCalls    []toolCall      `json:"tool_calls"`
	FunctionCall json.RawMessage `json:"function_call"`
}

// parseCompletion decodes and checks a non-streamed chat completion: exactly one choice
// with a message whose content and refusal are strings or null and whose tool calls
// are well formed. A legacy function_call is refused: it would be a tool call the
// gateway cannot review. What the gateway does not read of it (logprobs,
// reasoning_content, annotations, audio, ...) never reaches the client: the answer is
// written anew (completionBody).
func parseCompletion(data []byte) (*reply, *apiError) {
	w, err := decodeCompletion(data)
	if err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return nil, malformed("%s has the wrong type", typeErr.Field)
		}
		return nil, malformed("not a JSON object")
	}
	if err := vetMembers(data, replyMembers); err != nil {
		return nil, malformed("%v", err)
	}
	if len(w.Choices) != 1 {
		return nil, malformed("%d choices, want 1", len(w.Choices))
	}
	c := w.Choices[0]
	if c.Message == nil {
		return nil, malformed("the choice has no message object")
	}
	if fc := c.Message.FunctionCall; len(fc) > 0 && !bytes.Equal(fc, []byte("null")) {
		return nil, malformed("legacy function_call is not supported; the upstream must answer with tool_calls")
	}
	r := &reply{content: c.Message.Content, refusal: c.Message.Refusal, calls: c.Message.ToolCalls, meta: w.chunkMeta.vetted(), usage: vetUsage(w.Usage)}
	if c.FinishReason != nil {
		r.finish = *c.FinishReason
	}
	return r, checkCalls(r.calls)
}

// checkCalls requires every tool call to have a unique id, and every function call a
// function name.
func checkCalls(calls []toolCall) *apiError {
	seen := make(map[string]bool, len(calls))
	for i, c := range calls {
		switch {
		case c.ID == "":
			return malformed("tool call %d has no id", i)
		case seen[c.ID]:
			return malformed("tool call id %q repeats", c.ID)
		case c.isFunction() && c.Function.Name == "":
			return malformed("tool call %q has no function name", c.ID)
		}
		seen[c.ID] = true
	}
	return nil
}

// chunkMeta are the members every chunk of a stream repeats.
type chunkMeta struct {
	ID                string `json:"id"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
}

// chunk is one chat.completion.chunk event.
type chunk struct {
	chunkMeta
	Choices []struct {
		Index        int        `json:"index"`
		Delta        chunkDelta `json:"delta"`
		FinishReason *string    `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	// Error is set in the error event an upstream may end its stream with.
	Error json.RawMessage `json:"error"`
}

type chunkDelta struct {
	Content      *string          `json:"content"`
	Refusal      *string          `json:"refusal"`
	ToolCalls    []toolCallDelta  `json:"tool_calls"`
	FunctionCall *json.RawMessage `json:"function_call"`
}

// toolCallDelta is a piece of a streamed tool call: the first piece of a call has its
// id and function name, the later ones more of its arguments.
type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// assembler puts a streamed reply together from its chunks.
type assembler struct {
	r       reply
	content strings.Builder
	refusal strings.Builder
	hasText bool
	hasRef  bool
	byIndex map[int]int // tool call index -> position in r.calls
	size    int
}

// add takes one chunk and returns the text deltas it carries (for pass-through).
func (a *assembler) add(data []byte) (content, refusal string, e *apiError) {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return "", "", malformed("a stream event is not a chat.completion.chunk: %v", err)
	}
	if err := vetMembers(data, replyMembers); err != nil {
		return "", "", malformed("a stream event: %v", err)
	}
	if len(c.Error) > 0 && !bytes.Equal(c.Error, jsonNull) {
		return "", "", upstreamEventError(c.Error)
	}
	if c.ID != "" {
		a.r.meta = c.chunkMeta.vetted()
	}
	if u := vetUsage(c.Usage); u != nil {
		a.r.usage = u
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			return "", "", malformed("a chunk for choice %d; the gateway asks for one", ch.Index)
		}
		d := ch.Delta
		if d.FunctionCall != nil && !bytes.Equal(*d.FunctionCall, []byte("null")) {
			return "", "", malformed("legacy function_call is not supported; the upstream must answer with tool_calls")
		}
		if d.Content != nil {
			a.content.WriteString(*d.Content)
			a.hasText, content = true, content+*d.Content
		}
		if d.Refusal != nil {
			a.refusal.WriteString(*d.Refusal)
			a.hasRef, refusal = true, refusal+*d.Refusal
		}
		for _, tc := range d.ToolCalls {
			a.addCall(tc)
		}
		if ch.FinishReason != nil {
			a.r.finish = *ch.FinishReason
		}
		a.size += len(content) + len(refusal)
		for _, tc := range d.ToolCalls {
			a.size += len(tc.Function.Arguments)
		}
	}
	if a.size > maxReplyBytes {
		return "", "", malformed("the reply exceeds %d bytes", maxReplyBytes)
	}
	return content, refusal, nil
}

// upstreamEventError is the error the gateway answers for an upstream's error event:
// its own error object, with the upstream error's message when it has one. Any
// present error member but null ends the stream so (false, 0 and "" too): the event
// is never relayed, and nothing else it holds (a tool call) reaches the client.
func upstreamEventError(raw json.RawMessage) *apiError {
	e := newError(http.StatusBadGateway, typeUpstream, codeUpstreamError, "the upstream sent an error event")
	var body struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Message != "" {
		e.Message += ": " + body.Message
	}
	return e
}

// addCall merges one tool call delta: by index, or, for servers that send none, as a
// new call when it has a new id, else into the last call.
func (a *assembler) addCall(d toolCallDelta) {
	if a.byIndex == nil {
		a.byIndex = map[int]int{}
	}
	pos, ok := -1, false
	switch {
	case d.Index != nil:
		pos, ok = a.byIndex[*d.Index]
	case len(a.r.calls) > 0 && (d.ID == "" || d.ID == a.r.calls[len(a.r.calls)-1].ID):
		pos, ok = len(a.r.calls)-1, true
	}
	if !ok {
		pos = len(a.r.calls)
		a.r.calls = append(a.r.calls, toolCall{})
		if d.Index != nil {
			a.byIndex[*d.Index] = pos
		}
	}
	c := &a.r.calls[pos]
	if d.ID != "" {
		c.ID = d.ID
	}
	if d.Type != "" {
		c.Type = d.Type
	}
	if d.Function.Name != c.Function.Name {
		c.Function.Name += d.Function.Name // a name sent whole, again, or in pieces
	}
	c.Function.Arguments += d.Function.Arguments
}

// reply returns the assembled reply once the stream ended; a stream that ended before
// a finish_reason is malformed.
func (a *assembler) reply() (*reply, *apiError) {
	if a.r.finish == "" {
		return nil, malformed("the stream ended before a finish_reason")
	}
	if a.hasText {
		s := a.content.String()
		a.r.content = &s
	}
	if a.hasRef {
		s := a.refusal.String()
		a.r.refusal = &s
	}
	return &a.r, checkCalls(a.r.calls)
}
