package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/docs/apitest"
	"github.com/agentd-dev/agentd/engine"
)

// scriptedUpstream answers by the last message's text: a get_quote or a place_trade
// call, an answer, a slow answer, a 429, a reply that is no JSON; and lists one model.
func scriptedUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if r.URL.Path == "/v1/models/m" || r.URL.Path == "/v1/models" {
				model := `{"id":"m","object":"model","created":0,"owned_by":"test"}`
				if r.URL.Path == "/v1/models" {
					model = `{"object":"list","data":[` + model + `]}`
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(model))
				return
			}
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"no such model","type":"invalid_request_error","param":null,"code":"model_not_found"}}`))
			return
		}
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		last := req.Messages[len(req.Messages)-1].Content
		call := func(name, args string) string {
			return `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",` +
				`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"` + name + `","arguments":` + args + `}}]}}]}`
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(last, "quote") && req.Stream:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = fmt.Fprint(w, `data: {"id":"c1","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_quote","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`+"\n\ndata: [DONE]\n\n")
		case strings.HasPrefix(last, "quote"):
			_, _ = w.Write([]byte(call("get_quote", `"{\"symbol\":\"ACME\"}"`)))
		case strings.HasPrefix(last, "trade"):
			_, _ = w.Write([]byte(call("place_trade", `"{\"amount\":5}"`)))
		case last == "slow":
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		case last == "busy":
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`))
		case last == "garbage":
			_, _ = w.Write([]byte("<html>"))
		default:
			_, _ = w.Write([]byte(`{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello"}}]}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestOpenAPI_GatewayAnswersMatchTheDocument answers every status docs/openapi.yaml
// documents for the gateway's routes (but 401, which the daemon's authorization
// answers for every route) and checks each body against the document's schema.
func TestOpenAPI_GatewayAnswersMatchTheDocument(t *testing.T) {
	doc := apitest.Load(t)
	up := scriptedUpstream(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	base := up.URL + "/v1"
	refuse := newTestGateway(t, exampleGeneration(t, base, ""), 2048)
	reject := newTestGateway(t, exampleGeneration(t, base, "on_reject: error\ntimeout: 200ms"), 0)
	noKey := newTestGateway(t, exampleGeneration(t, base, "api_key_env: AGENTD_TEST_KEY_THAT_IS_NOT_SET"), 0)
	down := newTestGateway(t, exampleGeneration(t, closed.URL+"/v1", ""), 0)
	none := newTestGateway(t, exampleGeneration(t, "", ""), 0)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error","param":null,"code":"overloaded"}}`))
	}))
	defer failing.Close()
	slowUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second):
		}
	}))
	defer slowUp.Close()
	overloaded := newTestGateway(t, exampleGeneration(t, failing.URL+"/v1", ""), 0)
	slow := newTestGateway(t, exampleGeneration(t, slowUp.URL+"/v1", "timeout: 200ms"), 0)
	notReady := newTestGateway(t, nil, 0)

	chat := func(text string) string {
		return `{"model":"m","messages":[{"role":"user","content":"` + text + `"}]}`
	}
	acme := `{"model":"m","metadata":{"tenant":"acme"},"messages":[{"role":"user","content":"quote"}]}`
	calls := []struct {
		name   string
		g      *Gateway
		method string
		path   string
		body   string
		header []string
		tenant string
		want   int
	}{
		{"a tool round", refuse, "POST", "/v1/chat/completions", chat("quote"), nil, "", 200},
		{"a streamed tool round", refuse, "POST", "/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"quote"}]}`, nil, "", 200},
		{"a refused round", refuse, "POST", "/v1/chat/completions", chat("trade"), []string{"X-Request-Id", "failed-1"}, "", 200},
		{"the failed request again", refuse, "POST", "/v1/chat/completions", chat("trade"), []string{"X-Request-Id", "failed-1"}, "", 409},
		{"an answer", refuse, "POST", "/v1/chat/completions", chat("hi"), nil, "", 200},
		{"no messages", refuse, "POST", "/v1/chat/completions", `{"messages":[]}`, nil, "", 400},
		{"a rejected round", reject, "POST", "/v1/chat/completions", chat("trade"), nil, "", 403},
		{"a request of tenant acme", refuse, "POST", "/v1/chat/completions", acme, []string{"X-Request-Id", "acme-1"}, "acme", 200},
		{"the request from another tenant", refuse, "POST", "/v1/chat/completions", acme, []string{"X-Request-Id", "acme-1"}, "other", 403},
		{"no gateway", none, "POST", "/v1/chat/completions", chat("hi"), nil, "", 404},
		{"too large", refuse, "POST", "/v1/chat/completions", chat(strings.Repeat("x", 4096)), nil, "", 413},
		{"no key", noKey, "POST", "/v1/chat/completions", chat("hi"), nil, "", 500},
		{"malformed", refuse, "POST", "/v1/chat/completions", chat("garbage"), nil, "", 502},
		{"not ready", notReady, "POST", "/v1/chat/completions", chat("hi"), nil, "", 503},
		{"slow", reject, "POST", "/v1/chat/completions", chat("slow"), nil, "", 504},
		{"busy", refuse, "POST", "/v1/chat/completions", chat("busy"), nil, "", 429},
		{"models", refuse, "GET", "/v1/models", "", nil, "", 200},
		{"models, no gateway", none, "GET", "/v1/models", "", nil, "", 404},
		{"models, upstream down", down, "GET", "/v1/models", "", nil, "", 502},
		{"models, upstream overloaded", overloaded, "GET", "/v1/models", "", nil, "", 503},
		{"models, upstream slow", slow, "GET", "/v1/models", "", nil, "", 504},
		{"model", refuse, "GET", "/v1/models/m", "", nil, "", 200},
		{"no such model", refuse, "GET", "/v1/models/nope", "", nil, "", 404},
		{"model, upstream down", down, "GET", "/v1/models/m", "", nil, "", 502},
		{"model, upstream overloaded", overloaded, "GET", "/v1/models/m", "", nil, "", 503},
		{"model, upstream slow", slow, "GET", "/v1/models/m", "", nil, "", 504},
	}
	covered := map[string]bool{}
	for _, c := range calls {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		if c.tenant != "" {
			req = req.WithContext(engine.WithTenant(req.Context(), c.tenant))
		}
		for i := 0; i+1 < len(c.header); i += 2 {
			req.Header.Set(c.header[i], c.header[i+1])
		}
		rec := httptest.NewRecorder()
		route := "/v1/chat/completions"
		switch {
		case c.method == "POST":
			c.g.chat(rec, req)
		case strings.HasPrefix(c.path, "/v1/models/"):
			route = "/v1/models/{model}"
			req.SetPathValue("model", strings.TrimPrefix(c.path, "/v1/models/"))
			c.g.models(rec, req)
		default:
			route = "/v1/models"
			c.g.models(rec, req)
		}
		if rec.Code != c.want {
			t.Errorf("%s: %d, want %d: %s", c.name, rec.Code, c.want, rec.Body)
			continue
		}
		if body := rec.Body.String(); c.tenant == "other" && (!strings.Contains(body, `"code":"tenant_forbidden"`) || !strings.Contains(body, `"type":"permission_error"`)) {
			t.Errorf("%s: not a tenant_forbidden permission_error: %s", c.name, rec.Body)
		}
		status := fmt.Sprint(rec.Code)
		if !slices.Contains(doc.Statuses(c.method, route), status) {
			status = "default"
		}
		covered[c.method+" "+route+" "+status] = true
		if ct := rec.Header().Get("Content-Type"); ct == "text/event-stream" {
			if !bytes.HasSuffix(rec.Body.Bytes(), []byte("data: [DONE]\n\n")) {
				t.Errorf("%s: the stream does not end in [DONE]: %s", c.name, rec.Body)
			}
			continue
		}
		schema, _ := doc.Response(t, c.method, route, status)
		apitest.Validate(t, fmt.Sprintf("%s: the %s answer of %s %s", c.name, status, c.method, route), schema, rec.Body.Bytes())
	}
	for _, op := range []struct{ method, route string }{{"POST", "/v1/chat/completions"}, {"GET", "/v1/models"}, {"GET", "/v1/models/{model}"}} {
		for _, status := range doc.Statuses(op.method, op.route) {
			if status != "401" && !covered[op.method+" "+op.route+" "+status] {
				t.Errorf("no call answers %s %s with the documented %s", op.method, op.route, status)
			}
		}
	}
}

// TestOpenAPI_DocumentsEveryMount: every route the gateway mounts is in the document.
func TestOpenAPI_DocumentsEveryMount(t *testing.T) {
	doc := apitest.Load(t)
	for _, pattern := range Patterns {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok {
			method, path = "POST", pattern
		}
		if len(doc.Statuses(method, path)) == 0 {
			t.Errorf("docs/openapi.yaml does not document %s", pattern)
		}
	}
}
