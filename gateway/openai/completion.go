package openai

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"
)

// completionBody is the non-streamed answer the client gets for a reply, written by the
// gateway: the reply's id, created, model, system_fingerprint and usage, and one choice
// with the reviewed message (content, refusal, tool calls) and finish reason. Nothing
// else of the upstream's reply is relayed.
func completionBody(rep *reply, ans *answer) json.RawMessage {
	msg := map[string]any{"role": "assistant", "content": ans.content, "refusal": ans.refusal}
	if len(ans.calls) > 0 {
		msg["tool_calls"] = ans.calls
	}
	body := map[string]any{
		"id": rep.meta.ID, "object": "chat.completion", "created": rep.meta.Created, "model": rep.meta.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": ans.finish}},
	}
	if rep.meta.SystemFingerprint != "" {
		body["system_fingerprint"] = rep.meta.SystemFingerprint
	}
	if rep.usage != nil {
		body["usage"] = rep.usage
	}
	return mustJSON(body)
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
