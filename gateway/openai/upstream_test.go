package openai

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
