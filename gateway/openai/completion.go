package openai

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

// completionBody is the non-streamed answer the client gets for a reply, written by the
// gateway: the reply's id, created, model, system_fingerprint and usage, and one choice
// with the reviewed message (content, refusal, tool calls) and finish reason. Nothing
// else of the upstream's reply is relayed. It is appended directly, as encoding/json
// would write it, without reflection: it is written on every round.
func completionBody(rep *reply, ans *answer) []byte {
	n := 256 + len(rep.meta.ID) + len(rep.meta.Model) + len(rep.usage)
	if ans.content != nil {
		n += len(*ans.content)
	}
	for _, c := range ans.calls {
		n += 64 + len(c.ID) + len(c.Function.Name) + 2*len(c.Function.Arguments)
	}
	b := append(make([]byte, 0, n), `{"id":`...)
	b = engine.AppendJSONString(b, rep.meta.ID)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, rep.meta.Created, 10)
	b = append(b, `,"model":`...)
	b = engine.AppendJSONString(b, rep.meta.Model)
	if rep.meta.SystemFingerprint != "" {
		b = append(b, `,"system_fingerprint":`...)
		b = engine.AppendJSONString(b, rep.meta.SystemFingerprint)
	}
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	b = appendOptional(b, ans.content)
	b = append(b, `,"refusal":`...)
	b = appendOptional(b, ans.refusal)
	if len(ans.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range ans.calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = engine.AppendJSONString(b, c.ID)
			b = append(b, `,"type":`...)
			b = engine.AppendJSONString(b, c.Type)
			b = append(b, `,"function":{"name":`...)
			b = engine.AppendJSONString(b, c.Function.Name)
			b = append(b, `,"arguments":`...)
			b = engine.AppendJSONString(b, c.Function.Arguments)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	b = engine.AppendJSONString(b, ans.finish)
	b = append(b, "}]"...)
	if rep.usage != nil {
		b = append(append(b, `,"usage":`...), rep.usage...)
	}
	return append(b, '}')
}

// appendOptional appends s as a JSON string, or null.
func appendOptional(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return engine.AppendJSONString(b, *s)
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
