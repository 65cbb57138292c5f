package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

var failureScript = script(
	`{"user": "slow", "delay": "3s", "content": "too late"}`,
	`{"user": "rate limited", "status": 429,
	  "body": {"error": {"message": "slow down", "type": "rate_limit_error", "param": null, "code": "rate_limit_exceeded"}}}`,
	`{"user": "server error", "status": 503, "body": {"error": {"message": "overloaded", "type": "server_error", "param": null, "code": "overloaded"}}}`,
	`{"user": "not json", "raw": "<html>bad gateway</html>"}`,
	`{"user": "two choices", "raw": "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"a\"},\"finish_reason\":\"stop\"},{\"index\":1,\"message\":{\"role\":\"assistant\",\"content\":\"b\"},\"finish_reason\":\"stop\"}]}"}`,
	`{"user": "nameless call", "raw": "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}"}`,
	`{"user": "legacy function call", "raw": "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,\"function_call\":{\"name\":\"get_quote\",\"arguments\":\"{}\"}},\"finish_reason\":\"function_call\"}]}"}`,
	`{"user": "stream of garbage", "raw": "data: {\"choices\": 7}\n\n"}`,
	`{"user": "stream without end", "raw": "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_quote\",\"arguments\":\"{\\\"symbol\\\":\"}}]},\"finish_reason\":null}]}\n\n"}`,
	`{"user": "stream error event", "raw": "data: {\"error\": {\"message\": \"model crashed\", \"type\": \"server_error\", \"code\": \"crash\"}}\n\n"}`,
)

// TestOpenAIGateway_UpstreamFailures checks that every kind of upstream failure is an
// OpenAI-shaped error the official client decodes, and that a malformed reply never
// reaches the client half-reviewed.
func TestOpenAIGateway_UpstreamFailures(t *testing.T) {
	g := startGateway(t, failureScript, "timeout: 1s", nil)
	tests := []struct {
		question string
		stream   bool
		status   int
		code     string
		message  string
	}{
		{question: "slow", status: http.StatusGatewayTimeout, code: "upstream_timeout"},
		{question: "slow", stream: true, status: http.StatusGatewayTimeout, code: "upstream_timeout"},
		{question: "rate limited", status: http.StatusTooManyRequests, code: "rate_limit_exceeded", message: "slow down"},
		{question: "server error", stream: true, status: http.StatusServiceUnavailable, code: "overloaded", message: "overloaded"},
		{question: "not json", status: http.StatusBadGateway, code: "upstream_malformed", message: "not a JSON object"},
		{question: "two choices", status: http.StatusBadGateway, code: "upstream_malformed", message: "2 choices"},
		{question: "nameless call", status: http.StatusBadGateway, code: "upstream_malformed", message: "no function name"},
		{question: "legacy function call", status: http.StatusBadGateway, code: "upstream_malformed", message: "function_call"},
		{question: "stream of garbage", stream: true, status: http.StatusBadGateway, code: "upstream_malformed", message: "chat.completion.chunk"},
		{question: "stream without end", stream: true, status: http.StatusBadGateway, code: "upstream_malformed", message: "before a finish_reason"},
		{question: "stream error event", stream: true, status: http.StatusBadGateway, code: "upstream_error", message: "model crashed"},
	}
	for _, tt := range tests {
		name := tt.question
		if tt.stream {
			name += " (streamed)"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tt.stream {
				s := g.stream(t, ask(tt.question))
				if len(s.chunks) != 0 {
					t.Errorf("%d chunks reached the client:\n%s", len(s.chunks), s.raw())
				}
				err = s.err
			} else {
				_, err = g.client.Chat.Completions.New(context.Background(), ask(tt.question))
			}
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error = %v, want an API error", err)
			}
			if apiErr.StatusCode != tt.status || apiErr.Code != tt.code || !strings.Contains(apiErr.Message, tt.message) {
				t.Errorf("error = %d %s %q, want %d %s containing %q", apiErr.StatusCode, apiErr.Code, apiErr.Message, tt.status, tt.code, tt.message)
			}
		})
	}
}

// TestOpenAIGateway_UnreachableAndMisconfiguredUpstream: nothing listens at the
// upstream URL (502), or the key's variable is not set (500); neither error names the
// key.
func TestOpenAIGateway_UnreachableAndMisconfiguredUpstream(t *testing.T) {
	unreachable := startDaemonEnv(t, []string{upstreamKey}, gatewayConfig(t, "http://"+freeAddr(t)+"/v1", "", nil))
	noKey := startDaemon(t, gatewayConfig(t, "http://"+freeAddr(t)+"/v1", "", nil))
	for _, tt := range []struct {
		d      *daemon
		status int
		code   string
	}{
		{unreachable, http.StatusBadGateway, "upstream_unreachable"},
		{noKey, http.StatusInternalServerError, "gateway_misconfigured"},
	} {
		client := newClient(tt.d.url, "unused")
		_, err := client.Chat.Completions.New(context.Background(), ask("hello"))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.status || apiErr.Code != tt.code {
			t.Errorf("error = %v, want %d %s", err, tt.status, tt.code)
		}
	}
}

// TestOpenAIGateway_UpstreamKeyStaysSecret: the daemon's token is the client's API key,
// the upstream's key comes from the daemon's environment; the upstream only accepts
// that key, and no answer or log line ever shows it, not even an upstream error that
// echoes it.
func TestOpenAIGateway_UpstreamKeyStaysSecret(t *testing.T) {
	_, key, _ := strings.Cut(upstreamKey, "=")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("daemon-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, script(
		`{"user": "hello", "content": "hi"}`,
		`{"user": "echo the key", "status": 400, "body": {"error": {"message": "bad key `+key+`", "type": "invalid_request_error", "code": "bad"}}}`,
	), "", nil, "--token-file", tokenFile, "--log-level", "debug")
	client := newClient(g.d.url, "daemon-token")
	c, err := client.Chat.Completions.New(context.Background(), ask("hello"))
	if err != nil || c.Choices[0].Message.Content != "hi" {
		t.Fatalf("with the daemon token: %v", err)
	}
	_, err = client.Chat.Completions.New(context.Background(), ask("echo the key"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || strings.Contains(apiErr.RawJSON(), key) ||
		!strings.Contains(apiErr.Message, "bad key [REDACTED]") {
		t.Errorf("upstream error = %v (%s)", err, apiErr.RawJSON())
	}
	wrong := newClient(g.d.url, "wrong-token")
	_, err = wrong.Chat.Completions.New(context.Background(), ask("hello"))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // let the daemon's last log lines land
	if strings.Contains(g.d.stderr.String(), key) {
		t.Errorf("the daemon's log shows the upstream key:\n%s", g.d.stderr)
	}
}

// TestOpenAIGateway_BadRequests checks what the gateway refuses before any stage runs:
// each is an OpenAI-shaped 4xx naming the parameter.
func TestOpenAIGateway_BadRequests(t *testing.T) {
	g := startGateway(t, script(`{"user": "hello", "content": "hi"}`), "", nil, "--max-body", "2048")
	plain := startDaemon(t, filepath.Join(repoRoot(t), "examples", "stock-agent"))
	tests := []struct {
		name   string
		d      *daemon
		method string
		body   string
		status int
		code   string
		param  string
	}{
		{"not JSON", g.d, "POST", `{"messages": [`, 400, "invalid_json", ""},
		{"no messages", g.d, "POST", `{"model": "m"}`, 400, "invalid_messages", "messages"},
		{"unknown role", g.d, "POST", `{"messages": [{"role": "function", "content": "x"}]}`, 400, "invalid_messages", "messages[0].role"},
		{"content of the wrong type", g.d, "POST", `{"messages": [{"role": "user", "content": 7}]}`, 400, "invalid_messages", "messages[0].content"},
		{"n above 1", g.d, "POST", `{"n": 2, "messages": [{"role": "user", "content": "hello"}]}`, 400, "invalid_field", "n"},
		{"stream not a boolean", g.d, "POST", `{"stream": "yes", "messages": [{"role": "user", "content": "hello"}]}`, 400, "invalid_field", "stream"},
		{"last message from the assistant", g.d, "POST", `{"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]}`,
			400, "invalid_messages", "messages[1].role"},
		{"no user message", g.d, "POST", `{"messages": [{"role": "system", "content": "be nice"}]}`, 400, "invalid_messages", "messages"},
		{"a tool result for no call", g.d, "POST", `{"messages": [{"role": "user", "content": "hello"}, {"role": "tool", "tool_call_id": "call_9", "content": "1"}]}`,
			400, "invalid_messages", "messages[1].tool_call_id"},
		{"request id too long", g.d, "POST", `{"messages": [{"role": "user", "content": "hello"}]}`, 400, "invalid_field", "X-Request-Id"},
		{"body too large", g.d, "POST", `{"messages": [{"role": "user", "content": "` + strings.Repeat("a", 4096) + `"}]}`, 413, "body_too_large", ""},
		{"GET", g.d, "GET", "", 405, "method_not_allowed", ""},
		{"gateway not configured", plain, "POST", `{"messages": [{"role": "user", "content": "hello"}]}`, 404, "gateway_not_configured", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := []string{}
			if tt.name == "request id too long" {
				header = []string{"X-Request-Id", strings.Repeat("r", 200)}
			}
			status, body := tt.d.do(t, tt.method, "/v1/chat/completions", tt.body, header...)
			var e struct {
				Error struct {
					Type, Code, Message string
					Param               *string
				}
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || status != tt.status || e.Error.Code != tt.code || e.Error.Message == "" {
				t.Fatalf("%d %s, want %d %s", status, body, tt.status, tt.code)
			}
			if got := ""; tt.param != "" && (e.Error.Param == nil || *e.Error.Param != tt.param) {
				if e.Error.Param != nil {
					got = *e.Error.Param
				}
				t.Errorf("param = %q, want %q", got, tt.param)
			}
		})
	}
}

// TestOpenAIGateway_StreamTimeoutIsTotal: an upstream that sends an empty chunk every
// 50ms forever cannot hold a streamed call open: the timeout (1s) bounds the whole
// exchange, not each event, and the call ends as a 504 upstream_timeout.
func TestOpenAIGateway_StreamTimeoutIsTotal(t *testing.T) {
	stop := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":null}]}`+"\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			case <-stop:
				return
			}
		}
	}))
	t.Cleanup(func() { close(stop); up.Close() })
	d := startDaemonEnv(t, []string{upstreamKey}, gatewayConfig(t, up.URL+"/v1", "timeout: 1s", nil))
	g := &gateway{d: d, client: newClient(d.url, "unused")}
	s := g.stream(t, ask("hello"))
	var apiErr *openai.Error
	if !errors.As(s.err, &apiErr) || apiErr.StatusCode != http.StatusGatewayTimeout || apiErr.Code != "upstream_timeout" {
		t.Fatalf("error = %v, want 504 upstream_timeout", s.err)
	}
}
