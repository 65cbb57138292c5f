package openai

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// completionBody is a non-streamed reply with the answer in place: the reply as the
// upstream sent it when the answer is its own (same content, calls and finish reason),
// else its members as they were but for the message's content and tool calls and the
// choice's finish_reason.
func completionBody(rep *reply, ans *answer) (json.RawMessage, error) {
	if ans.finish == rep.finish && equalText(ans.content, rep.content) && slices.Equal(ans.calls, rep.calls) {
		return rep.raw, nil
	}
	var body, choice, msg map[string]json.RawMessage
	var choices []json.RawMessage
	if err := json.Unmarshal(rep.raw, &body); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body["choices"], &choices); err != nil || len(choices) != 1 {
		return nil, fmt.Errorf("choices: %v", err)
	}
	if err := json.Unmarshal(choices[0], &choice); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(choice["message"], &msg); err != nil {
		return nil, err
	}
	msg["content"] = mustJSON(ans.content)
	delete(msg, "tool_calls")
	if len(ans.calls) > 0 {
		msg["tool_calls"] = mustJSON(ans.calls)
	}
	choice["message"] = mustJSON(msg)
	choice["finish_reason"] = mustJSON(ans.finish)
	body["choices"] = mustJSON([]any{choice})
	return mustJSON(body), nil
}

func equalText(a, b *string) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// mustJSON encodes values the gateway built itself, which always encode.
func mustJSON(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// completionID is the id of a completion agentd answers itself.
func completionID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "chatcmpl-agentd-" + hex.EncodeToString(b)
}

// answerShortCircuit answers a before_planning short circuit as a completion, streamed
// when the client asked for a stream, without calling the upstream.
func (c *chatCall) answerShortCircuit(text string) {
	meta := chunkMeta{ID: completionID(), Created: time.Now().Unix(), Model: c.req.model}
	if c.req.stream {
		s := newStreamWriter(c.w, modeBuffered)
		s.meta = meta
		s.finish(&answer{content: &text, finish: "stop"}, nil)
		return
	}
	writeJSON(c.w, http.StatusOK, map[string]any{
		"id": meta.ID, "object": "chat.completion", "created": meta.Created, "model": meta.Model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": text, "refusal": nil},
		}},
		"usage": map[string]int{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
	})
}
