package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"
)

// HeaderStreamMode is the response header of a streamed call that says how content
// reached the client: passthrough (each piece as the upstream sent it; no
// after_synthesis hook of the request's generation could change it) or buffered
// (held until the reply was complete and reviewed, then sent in pieces).
const HeaderStreamMode = "X-Agentd-Stream"

// Stream modes.
const (
	modePassthrough = "passthrough"
	modeBuffered    = "buffered"
)

// chunkPiece bounds the text of one chunk the gateway writes itself.
const chunkPiece = 64

// stream runs a streamed call. Content is passed through as it arrives when no
// after_synthesis hook could change it, else held; tool call pieces are always held
// and assembled, and the calls are written only after their round was reviewed. An
// upstream that fails, or answers malformed chunks, before anything was written gets
// an OpenAI-shaped error response; after that, an error event ends the stream.
func (c *chatCall) stream(ctx context.Context, body []byte) *apiError {
	mode := modeBuffered
	if !rewritesResponse(c.gen) {
		mode = modePassthrough
	}
	s := newStreamWriter(c.w, mode)
	span := c.startChat(ctx)
	x, e := c.g.up.call(ctx, c.cfg, http.MethodPost, "/chat/completions", body, true)
	if e != nil {
		endChat(span, nil, e)
		return e
	}
	defer x.close()
	if isJSON(x.resp.Header.Get("Content-Type")) {
		return c.unstreamed(ctx, x, s, span)
	}
	asm := &assembler{}
	events := x.events()
	for {
		data, ok, e := events.next()
		if e != nil {
			endChat(span, nil, e)
			return s.fail(e)
		}
		if !ok || bytes.Equal(data, []byte("[DONE]")) {
			break
		}
		content, refusal, e := asm.add(data)
		if e != nil {
			e.Message = string(x.scrub([]byte(e.Message)))
			endChat(span, nil, e)
			return s.fail(e)
		}
		s.meta = asm.r.meta
		if mode == modePassthrough && (content != "" || refusal != "") {
			s.send(&outDelta{Content: nonEmpty(content), Refusal: nonEmpty(refusal)}, "", nil)
		}
	}
	rep, e := asm.reply()
	endChat(span, usageOf(span, asm.r.meta.Model, asm.r.usage, nil), e)
	if e != nil {
		return s.fail(e)
	}
	ans, e := c.decide(ctx, rep)
	if e != nil {
		return s.fail(e)
	}
	s.finish(ans, rep.usage)
	return nil
}

// unstreamed answers a streamed call whose upstream answered with one JSON completion
// (it does not stream): the completion is reviewed as one, then written as chunks.
func (c *chatCall) unstreamed(ctx context.Context, x *exchange, s *streamWriter, span trace.Span) *apiError {
	data, e := x.readAll()
	if e != nil {
		endChat(span, nil, e)
		return e
	}
	rep, e := parseCompletion(data)
	endChat(span, usageOf(span, "", nil, data), e)
	if e != nil {
		return e
	}
	ans, e := c.decide(ctx, rep)
	if e != nil {
		return e
	}
	s.mode, s.meta = modeBuffered, rep.meta
	s.w.Header().Set(HeaderStreamMode, modeBuffered)
	s.finish(ans, rep.usage)
	return nil
}

func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// streamWriter writes chat.completion.chunk events. The response starts with the first
// event; until then an error can still be an HTTP status.
type streamWriter struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	mode     string
	meta     chunkMeta
	started  bool
	roleSent bool
}

func newStreamWriter(w http.ResponseWriter, mode string) *streamWriter {
	w.Header().Set(HeaderStreamMode, mode)
	return &streamWriter{w: w, rc: http.NewResponseController(w), mode: mode}
}

type outDelta struct {
	Role      string        `json:"role,omitempty"`
	Content   *string       `json:"content,omitempty"`
	Refusal   *string       `json:"refusal,omitempty"`
	ToolCalls []outToolCall `json:"tool_calls,omitempty"`
}

type outToolCall struct {
	Index int `json:"index"`
	toolCall
}

type outChoice struct {
	Index        int             `json:"index"`
	Delta        outDelta        `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type outChunk struct {
	chunkMeta
	Object  string          `json:"object"`
	Choices []outChoice     `json:"choices"`
	Usage   json.RawMessage `json:"usage,omitempty"`
}

var jsonNull = json.RawMessage("null")

// send writes one chunk: a delta (the first one carries the assistant role) with an
// optional finish reason, or, with d nil, usage alone.
func (s *streamWriter) send(d *outDelta, finish string, usage json.RawMessage) {
	ch := outChunk{chunkMeta: s.meta, Object: "chat.completion.chunk", Choices: []outChoice{}, Usage: usage}
	if d != nil {
		if !s.roleSent {
			d.Role, s.roleSent = "assistant", true
		}
		choice := outChoice{Delta: *d, Logprobs: jsonNull}
		if finish != "" {
			choice.FinishReason = &finish
		}
		ch.Choices = append(ch.Choices, choice)
	}
	s.event(mustJSON(ch))
}

func (s *streamWriter) event(data []byte) {
	if !s.started {
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	var buf bytes.Buffer
	buf.Grow(len(data) + 8)
	buf.WriteString("data: ")
	buf.Write(data)
	buf.WriteString("\n\n")
	_, _ = s.w.Write(buf.Bytes())
	_ = s.rc.Flush()
}

// text writes text as content chunks of at most chunkPiece bytes, cut at rune
// boundaries.
func (s *streamWriter) text(text string) {
	for text != "" {
		n := min(len(text), chunkPiece)
		for n < len(text) && n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		if n == 0 {
			_, n = utf8.DecodeRuneInString(text)
		}
		piece := text[:n]
		s.send(&outDelta{Content: &piece}, "", nil)
		text = text[n:]
	}
}

// finish writes the rest of an answer: its text (all of it when buffered, else the
// gateway's tail), its tool calls, the finish reason, the usage, and [DONE].
func (s *streamWriter) finish(ans *answer, usage json.RawMessage) {
	if s.mode == modeBuffered {
		if ans.content != nil {
			s.text(*ans.content)
		}
		if ans.refusal != nil {
			s.send(&outDelta{Refusal: ans.refusal}, "", nil)
		}
	} else {
		s.text(ans.tail)
	}
	for i, call := range ans.calls {
		s.send(&outDelta{ToolCalls: []outToolCall{{Index: i, toolCall: call}}}, "", nil)
	}
	s.send(&outDelta{}, ans.finish, nil)
	if usage != nil {
		s.send(nil, "", usage)
	}
	s.event([]byte("[DONE]"))
}

// fail ends the stream with e. Before anything was written it returns e for an HTTP
// error response; after, it writes e as an error event, the way OpenAI streams report
// errors, and returns nil. The event is the gateway's own error object: an upstream's
// error event is never relayed.
func (s *streamWriter) fail(e *apiError) *apiError {
	if !s.started || e == errClientGone {
		return e
	}
	s.event(mustJSON(&apiError{Status: e.Status, Type: e.Type, Code: e.Code, Param: e.Param, Message: e.Message, Details: e.Details}))
	return nil
}
