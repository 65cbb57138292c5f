// Command upstream is a scripted OpenAI-compatible chat-completions server for the
// openai-gateway example, the gateway's tests and its benchmark. It replays the replies
// of a script file (see script.go), streamed or not, as the request asks; no model
// runs. It serves POST /v1/chat/completions, GET /v1/models and GET /v1/models/{id}.
//
//	upstream -script script.json [-addr 127.0.0.1:9300] [-key-env UPSTREAM_API_KEY]
//
// With -key-env, every request must carry that variable's value as its bearer token.
// It prints "upstream listening on http://ADDR/v1" once it accepts connections.
package main

import (
	"crypto/subtle"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9300", "listen address (port 0 picks a free one)")
	path := flag.String("script", "", "the script file (required)")
	keyEnv := flag.String("key-env", "", "environment variable holding the bearer token every request must carry")
	flag.Parse()
	if *path == "" {
		flag.Usage()
		os.Exit(2)
	}
	s, err := loadScript(*path)
	if err != nil {
		log.Fatal(err)
	}
	key := ""
	if *keyEnv != "" {
		if key = os.Getenv(*keyEnv); key == "" {
			log.Fatalf("-key-env %s: the variable is not set", *keyEnv)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("upstream listening on http://%s/v1\n", ln.Addr())
	srv := &http.Server{Handler: handler(s, key), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

func handler(s *script, key string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { complete(w, r, s) })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{model(s.Model)}})
	})
	mux.HandleFunc("GET /v1/models/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != s.Model {
			writeError(w, http.StatusNotFound, "model_not_found", "no model "+r.PathValue("id"))
			return
		}
		writeJSON(w, http.StatusOK, model(s.Model))
	})
	if key == "" {
		return mux
	}
	want := []byte("Bearer " + key)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeError(w, http.StatusUnauthorized, "invalid_api_key", "missing or wrong API key")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func model(id string) map[string]any {
	return map[string]any{"id": id, "object": "model", "created": 0, "owned_by": "agentd-example"}
}

// request is what the upstream reads of a chat-completions body.
type request struct {
	Messages []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct{}      `json:"tool_calls"`
	} `json:"messages"`
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func complete(w http.ResponseWriter, r *http.Request, s *script) {
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", err.Error())
		return
	}
	user, round, system := "", 1, []string{}
	for _, m := range req.Messages {
		switch {
		case m.Role == "user":
			user, round = text(m.Content), 1
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			round++
		case m.Role == "system" || m.Role == "developer":
			system = append(system, text(m.Content))
		}
	}
	rep, ok := s.match(user, round)
	if !ok {
		writeError(w, http.StatusBadRequest, "no_scripted_reply", fmt.Sprintf("no scripted reply for round %d of %q", round, user))
		return
	}
	if rep.Delay.Duration > 0 {
		select {
		case <-time.After(rep.Delay.Duration):
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case rep.Raw != nil:
		ct := "application/json"
		if req.Stream {
			ct = "text/event-stream"
		}
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write([]byte(*rep.Raw))
	case rep.Status != 0:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		_, _ = w.Write(rep.Body)
	case req.Stream && !rep.NoStream:
		streamReply(w, s.Model, rep, system, req.StreamOptions.IncludeUsage)
	default:
		writeJSON(w, http.StatusOK, completion(s.Model, rep, system))
	}
}

// content is the reply's text: the scripted content, or the system messages.
func (rep *reply) content(system []string) *string {
	if rep.EchoSystem {
		s := strings.Join(system, "\n")
		return &s
	}
	return rep.Content
}

func (rep *reply) finish() string {
	switch {
	case rep.Finish != "":
		return rep.Finish
	case len(rep.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func (rep *reply) usage() json.RawMessage {
	if rep.Usage != nil {
		return *rep.Usage
	}
	return json.RawMessage(`{"prompt_tokens":12,"completion_tokens":8,"total_tokens":20}`)
}

func (c scriptedCall) wire() map[string]any {
	typ := c.Type
	if typ == "" {
		typ = "function"
	}
	return map[string]any{"id": c.ID, "type": typ, "function": map[string]string{"name": c.Name, "arguments": c.Arguments}}
}

func completion(model string, rep *reply, system []string) map[string]any {
	msg := map[string]any{"role": "assistant", "content": rep.content(system), "refusal": nil}
	if len(rep.ToolCalls) > 0 {
		calls := make([]any, len(rep.ToolCalls))
		for i, c := range rep.ToolCalls {
			calls[i] = c.wire()
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": "chatcmpl-scripted", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": rep.finish(), "logprobs": nil}},
		"usage":   rep.usage(),
	}
}

func text(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	_ = json.Unmarshal(content, &parts)
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": code}})
}
