package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// streamed is one streamed call as the official client saw it.
type streamed struct {
	header http.Header
	chunks []openai.ChatCompletionChunk
	acc    openai.ChatCompletionAccumulator
	err    error
}

func (g *gateway) stream(t *testing.T, params openai.ChatCompletionNewParams, opts ...option.RequestOption) *streamed {
	t.Helper()
	var resp *http.Response
	s := g.client.Chat.Completions.NewStreaming(context.Background(), params, append(opts, option.WithResponseInto(&resp))...)
	out := &streamed{}
	for s.Next() {
		c := s.Current()
		out.chunks = append(out.chunks, c)
		out.acc.AddChunk(c)
	}
	out.err = s.Err()
	if resp != nil {
		out.header = resp.Header
	}
	return out
}

// toolCallChunks returns the chunks that carry tool call pieces.
func (s *streamed) toolCallChunks() []openai.ChatCompletionChunk {
	var out []openai.ChatCompletionChunk
	for _, c := range s.chunks {
		for _, ch := range c.Choices {
			if len(ch.Delta.ToolCalls) > 0 {
				out = append(out, c)
			}
		}
	}
	return out
}

// raw is every chunk as the client received it.
func (s *streamed) raw() string {
	var b strings.Builder
	for _, c := range s.chunks {
		b.WriteString(c.RawJSON())
		b.WriteByte('\n')
	}
	return b.String()
}

var streamScript = script(
	`{"user": "stream: what is ACME trading at?", "round": 1, "chunk": 3,
	  "tool_calls": [{"id": "call_s", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"}]}`,
	`{"user": "stream: what is ACME trading at?", "round": 2, "chunk": 4,
	  "content": "ACME trades at 182.50 USD. Questions: ir@acme.example"}`,
	`{"user": "stream: buy 100 ACME", "round": 1, "chunk": 2,
	  "tool_calls": [{"id": "call_secret_trade", "name": "place_trade", "arguments": "{\"symbol\":\"ACME\",\"amount\":18250}"}]}`,
	`{"user": "stream: talk first, then cut", "round": 1, "chunk": 4, "cut_after": 9, "content": "Checking the price.",
	  "tool_calls": [{"id": "call_cut", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"}]}`,
	`{"user": "stream: an upstream that does not stream", "round": 1, "no_stream": true,
	  "content": "One moment.", "tool_calls": [{"id": "call_ns", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"}]}`,
)

// TestOpenAIGateway_Streaming checks streamed calls with the official client: tool
// calls are assembled, reviewed and only then written, whole; a rejected round leaves
// no trace of its calls in any chunk; content is buffered and re-chunked when an
// after_synthesis hook could rewrite it (the example redacts), and passed through
// piece by piece when none could.
func TestOpenAIGateway_Streaming(t *testing.T) {
	buffered := startGateway(t, streamScript, "", nil)
	passthrough := startGateway(t, streamScript, "", map[string]string{"hooks/30-response.yaml": ""})

	t.Run("an allowed round is written after review, each call whole", func(t *testing.T) {
		t.Parallel()
		params := ask("stream: what is ACME trading at?")
		s := buffered.stream(t, params)
		if s.err != nil {
			t.Fatal(s.err)
		}
		if got := s.header.Get("X-Agentd-Stream"); got != "buffered" {
			t.Errorf("X-Agentd-Stream = %q", got)
		}
		calls := s.toolCallChunks()
		if len(calls) != 1 {
			t.Fatalf("%d chunks with tool calls, want the one assembled call", len(calls))
		}
		tc := calls[0].Choices[0].Delta.ToolCalls[0]
		if issued(tc.ID) != "1-1" || tc.Function.Name != "get_quote" || tc.Function.Arguments != `{"symbol":"ACME"}` {
			t.Errorf("tool call chunk = %s", calls[0].RawJSON())
		}
		c := s.acc.ChatCompletion
		if len(c.Choices) != 1 || c.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("accumulated = %+v", c)
		}
		runTools(&params, &c, quotes)
		s = buffered.stream(t, params)
		if s.err != nil {
			t.Fatal(s.err)
		}
		if got := s.acc.Choices[0].Message.Content; got != "ACME trades at 182.50 USD. Questions: [REDACTED]" {
			t.Errorf("answer = %q", got)
		}
		if strings.Contains(s.raw(), "ir@acme") {
			t.Errorf("a chunk carries the unredacted address:\n%s", s.raw())
		}
	})

	t.Run("a rejected round leaks no tool call in any chunk", func(t *testing.T) {
		t.Parallel()
		for _, g := range []*gateway{buffered, passthrough} {
			s := g.stream(t, ask("stream: buy 100 ACME"))
			if s.err != nil {
				t.Fatal(s.err)
			}
			if n := len(s.toolCallChunks()); n != 0 {
				t.Errorf("%d chunks carry tool calls:\n%s", n, s.raw())
			}
			for _, secret := range []string{"place_trade", "call_secret_trade", "18250"} {
				if strings.Contains(s.raw(), secret) {
					t.Errorf("a chunk carries %q:\n%s", secret, s.raw())
				}
			}
			if c := s.acc.Choices[0]; c.FinishReason != "stop" || !strings.Contains(c.Message.Content, "refused by policy") {
				t.Errorf("accumulated = %+v", c)
			}
		}
	})

	t.Run("content is passed through when no hook could change it", func(t *testing.T) {
		t.Parallel()
		params := ask("stream: what is ACME trading at?")
		s := passthrough.stream(t, params)
		c := s.acc.ChatCompletion
		runTools(&params, &c, quotes)
		s = passthrough.stream(t, params)
		if s.err != nil {
			t.Fatal(s.err)
		}
		if got := s.header.Get("X-Agentd-Stream"); got != "passthrough" {
			t.Errorf("X-Agentd-Stream = %q", got)
		}
		var pieces []string
		for _, c := range s.chunks {
			if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
				pieces = append(pieces, c.Choices[0].Delta.Content)
			}
		}
		if strings.Join(pieces, "") != "ACME trades at 182.50 USD. Questions: ir@acme.example" || len(pieces) != 14 || pieces[0] != "ACME" {
			t.Errorf("content pieces = %q, want the upstream's 4-byte pieces", pieces)
		}
	})

	t.Run("an upstream that does not stream is reviewed, then written as a stream", func(t *testing.T) {
		t.Parallel()
		s := passthrough.stream(t, ask("stream: an upstream that does not stream"))
		if s.err != nil {
			t.Fatal(s.err)
		}
		calls := s.toolCallChunks()
		if s.header.Get("X-Agentd-Stream") != "buffered" || len(calls) != 1 || issued(calls[0].Choices[0].Delta.ToolCalls[0].ID) != "1-1" {
			t.Errorf("%s, tool call chunks:\n%s", s.header.Get("X-Agentd-Stream"), s.raw())
		}
		if c := s.acc.Choices[0]; c.Message.Content != "One moment." || c.FinishReason != "tool_calls" {
			t.Errorf("accumulated = %+v", c)
		}
	})

	t.Run("a stream cut in a tool call ends in an error, the call never written", func(t *testing.T) {
		t.Parallel()
		s := passthrough.stream(t, ask("stream: talk first, then cut"))
		var se interface{ Error() string }
		if s.err == nil || !errors.As(s.err, &se) || !strings.Contains(s.err.Error(), "upstream") {
			t.Errorf("stream error = %v", s.err)
		}
		if got := s.acc.Choices; len(got) == 0 || got[0].Message.Content != "Checking the price." {
			t.Errorf("passed-through content = %+v", got)
		}
		if n := len(s.toolCallChunks()); n != 0 {
			t.Errorf("%d chunks carry tool calls:\n%s", n, s.raw())
		}
		s = buffered.stream(t, ask("stream: talk first, then cut"))
		var apiErr *openai.Error
		if !errors.As(s.err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway || len(s.chunks) != 0 {
			t.Errorf("buffered: %d chunks, error %v", len(s.chunks), s.err)
		}
	})
}
