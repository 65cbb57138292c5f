package openai

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// toolRound is an upstream reply with one get_quote call, always the same.
const toolRound = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,
"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_quote","arguments":"{\"symbol\":\"ACME\"}"}}]},
"finish_reason":"tool_calls","logprobs":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

// BenchmarkGateway_ToolRound is one user turn through the gateway on the example
// config, whose upstream answers with a tool call: before_planning, the upstream over
// loopback HTTP, after_planning (the decision memo answers from the second call on),
// one tool_call check, the response. Each call is a new conversation.
func BenchmarkGateway_ToolRound(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(toolRound))
	}))
	defer up.Close()
	g := newTestGateway(b, exampleGeneration(b, up.URL+"/v1", ""), 0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		body := `{"model":"m","metadata":{"tenant":"acme"},"messages":[{"role":"user","content":"What is ACME trading at? ` + strconv.Itoa(i) + `"}]}`
		rec := httptest.NewRecorder()
		g.chat(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"tool_calls"`) {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
