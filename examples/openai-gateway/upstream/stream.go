package main

import (
	"encoding/json"
	"net/http"
	"time"
	"unicode/utf8"
)

// streamReply writes rep as server-sent chat.completion.chunk events: the role, the
// content in pieces, each tool call's id and name, then its arguments in pieces, the
// finish reason, the usage when asked for, and [DONE]. With CutAfter it drops the
// connection after that many events instead.
func streamReply(w http.ResponseWriter, model string, rep *reply, system []string, usage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	created := time.Now().Unix()
	sent := 0
	event := func(v any) bool {
		if rep.CutAfter > 0 && sent == rep.CutAfter {
			if conn, _, err := rc.Hijack(); err == nil {
				conn.Close()
			}
			return false
		}
		data, _ := json.Marshal(v)
		_, _ = w.Write([]byte("data: " + string(data) + "\n\n"))
		_ = rc.Flush()
		sent++
		return true
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		}
	}
	size := rep.Chunk
	if size <= 0 {
		size = 5
	}
	if !event(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	if c := rep.content(system); c != nil {
		for _, piece := range pieces(*c, size) {
			if !event(chunk(map[string]any{"content": piece}, nil)) {
				return
			}
		}
	}
	for i, c := range rep.ToolCalls {
		first := c.wire()
		first["index"] = i
		first["function"] = map[string]string{"name": c.Name, "arguments": ""}
		if !event(chunk(map[string]any{"tool_calls": []any{first}}, nil)) {
			return
		}
		for _, piece := range pieces(c.Arguments, size) {
			more := map[string]any{"index": i, "function": map[string]string{"arguments": piece}}
			if !event(chunk(map[string]any{"tool_calls": []any{more}}, nil)) {
				return
			}
		}
	}
	if !event(chunk(map[string]any{}, rep.finish())) {
		return
	}
	if usage {
		if !event(map[string]any{"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": created,
			"model": model, "choices": []any{}, "usage": rep.usage()}) {
			return
		}
	}
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
	_ = rc.Flush()
}

// pieces cuts s into pieces of at most n bytes, at rune boundaries.
func pieces(s string, n int) []string {
	var out []string
	for s != "" {
		k := min(n, len(s))
		for k < len(s) && k > 0 && !utf8.RuneStart(s[k]) {
			k--
		}
		if k == 0 {
			_, k = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}
