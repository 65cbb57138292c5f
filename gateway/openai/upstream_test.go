package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
)

// The upstream key is scrubbed from an upstream's JSON error body however the body
// escapes it; a body that is not JSON is not passed through at all.
func TestExchange_ErrorBodyScrubsEveryFormOfTheKey(t *testing.T) {
	const key = "sk-up<&>7f3a"
	x := &exchange{key: key, resp: &http.Response{StatusCode: http.StatusUnauthorized, Status: "401 Unauthorized"}}
	for _, body := range []string{
		`{"error":{"message":"bad key sk-up<&>7f3a"}}`,
		`{"error":{"message":"bad key sk-up\u003c\u0026\u003e7f3a"}}`,
		`{"error":{"message":"bad key \u0073k-up\u003C&>7f3a"}}`,
		`{"error":{"sk-up<&>7f3a":["x", {"k":"\u0073k-up<&>7f3a!"}]}}`,
	} {
		e := x.errorBody([]byte(body))
		if e.raw == nil || strings.Contains(string(e.raw), "7f3a") || !strings.Contains(string(e.raw), redacted) {
			t.Errorf("%s: passed through as %s", body, e.raw)
		}
	}
	e := x.errorBody([]byte("<html>sk-up<&>7f3a</html>"))
	if e.raw != nil || e.Status != http.StatusUnauthorized || strings.Contains(e.Message, "7f3a") || strings.Contains(e.Message, "html") {
		t.Errorf("a page that is not JSON: %+v", e)
	}
	if e := x.errorBody([]byte(`{"error":{"message":"no key here"}}`)); string(e.raw) != `{"error":{"message":"no key here"}}` {
		t.Errorf("a body without the key is not passed as it is: %s", e.raw)
	}
}

// GET /v1/models answers JSON only: an upstream's HTML page, or JSON under another
// content type, is a 502 of the gateway's own.
func TestModels_AnswersJSONOnly(t *testing.T) {
	for _, tc := range []struct {
		contentType, body string
		want              int
	}{
		{"application/json", `{"object":"list","data":[]}`, http.StatusOK},
		{"text/html", `<script>alert(1)</script>`, http.StatusBadGateway},
		{"text/html", `{"object":"list","data":[]}`, http.StatusBadGateway},
		{"application/json", `<script>alert(1)</script>`, http.StatusBadGateway},
	} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", tc.contentType)
			_, _ = w.Write([]byte(tc.body))
		}))
		g := newTestGateway(t, exampleGeneration(t, up.URL+"/v1", ""), 0)
		rec := httptest.NewRecorder()
		g.models(rec, httptest.NewRequest(http.MethodGet, "/v1/models", nil))
		up.Close()
		if rec.Code != tc.want || rec.Header().Get("Content-Type") != "application/json" || strings.Contains(rec.Body.String(), "<script>") {
			t.Errorf("%s %s: %d %s %s", tc.contentType, tc.body, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
}

// A derived request id depends on the tenant: the same token under another tenant
// names another request.
func TestDerivedID_IncludesTheTenant(t *testing.T) {
	token := newToken()
	if !validToken(token) || derivedID("a", token) == derivedID("b", token) || derivedID("", token) != derivedID("", token) {
		t.Errorf("derived ids of token %q: a %s, b %s", token, derivedID("a", token), derivedID("b", token))
	}
	if got := tokenOf(callID(token, "step-2r3-1")); got != token {
		t.Errorf("tokenOf(callID) = %q, want %q", got, token)
	}
	for _, id := range []string{"call_1", "call_" + token, "call_" + strings.ToUpper(token) + "_1-1", "x_" + token + "_1-1"} {
		if got := tokenOf(id); got != "" {
			t.Errorf("tokenOf(%q) = %q, want none", id, got)
		}
	}
}

// The upstream timeout bounds the whole exchange: an upstream that keeps sending
// empty events is cut off at it, as one that sends nothing.
func TestUpstream_StreamTimeoutIsTotal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for r.Context().Err() == nil {
			if _, err := w.Write([]byte("data: \n\n")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond)
		}
	}))
	defer srv.Close()
	x, e := newUpstream().call(context.Background(), &config.OpenAIGateway{Upstream: srv.URL, Timeout: 100 * time.Millisecond}, http.MethodPost, "/chat/completions", []byte(`{}`), true)
	if e != nil {
		t.Fatalf("call: %+v", e)
	}
	defer x.close()
	events := x.events()
	// Without a total timeout the stream goes on: 5,000 events take at least 5s, fifty
	// times the timeout.
	for n := 0; n < 5000; n++ {
		_, ok, e := events.next()
		if e != nil {
			if e.Status != http.StatusGatewayTimeout || e.Code != codeTimeout {
				t.Fatalf("the stream ended with %+v, want 504 %s", e, codeTimeout)
			}
			return
		}
		if !ok {
			t.Fatal("the stream ended without an error")
		}
	}
	t.Fatal("5,000 empty events passed a timeout of 100ms")
}

// The key is scrubbed from an upstream's error body in every form a JSON encoder
// writes it in.
func TestUpstream_ScrubsEscapedKeys(t *testing.T) {
	const key = "sk-<live>&key"
	var all, allUpper strings.Builder
	for _, r := range key {
		all.WriteString(`\u00` + strings.ToLower(hex2(r)))
		allUpper.WriteString(`\u00` + hex2(r))
	}
	html, _ := json.Marshal(key)
	for name, form := range map[string]string{
		"plain": key, "HTML-escaped": strings.Trim(string(html), `"`), "all escaped": all.String(), "all escaped, upper case": allUpper.String(),
	} {
		x := &exchange{key: key}
		body := []byte(`{"error":{"message":"invalid key ` + form + `"}}`)
		if got := x.scrub(body); bytes.Contains(got, []byte(form)) || !bytes.Contains(got, []byte("[REDACTED]")) {
			t.Errorf("%s: scrubbed %s", name, got)
		}
	}
}

func hex2(r rune) string {
	return strings.ToUpper(string("0123456789abcdef"[r>>4]) + string("0123456789abcdef"[r&15]))
}

// The request id header given twice is refused: the gateway would read the first, a
// proxy in front of it (or its log) the other.
func TestRequestID_HeaderGivenTwiceIsRefused(t *testing.T) {
	cfg := &config.OpenAIGateway{RequestIDHeader: "X-Request-Id"}
	req, e := parseRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if e != nil {
		t.Fatal(e)
	}
	conv, e := analyze(req.messages)
	if e != nil {
		t.Fatal(e)
	}
	h := http.Header{}
	h.Add("X-Request-Id", "mine")
	if id, _, e := requestID(cfg, h, req, conv, "acme"); e != nil || id != "mine" {
		t.Fatalf("one header: %q, %v", id, e)
	}
	h.Add("X-Request-Id", "another-tenants")
	if id, _, e := requestID(cfg, h, req, conv, "acme"); e == nil || e.Status != http.StatusBadRequest {
		t.Errorf("two headers: id %q, error %+v; want a 400", id, e)
	}
}
