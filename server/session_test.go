package server

import (
	"crypto/sha256"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// login opens a session of testToken on h and returns its cookie.
func login(t *testing.T, h http.Handler, tlsConn bool) *http.Cookie {
	t.Helper()
	return loginAs(t, h, testToken, tlsConn)
}

func loginAs(t *testing.T, h http.Handler, token string, tlsConn bool) *http.Cookie {
	t.Helper()
	req := newRequest(http.MethodPost, "/v1/session", strings.NewReader(`{"token":"`+token+`"}`))
	req.Header.Set("Content-Type", "application/json")
	if tlsConn {
		req.TLS = &tls.ConnectionState{}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusNoContent || len(cookies) != 1 {
		t.Fatalf("log in = %d %s, cookies %v", rec.Code, rec.Body, cookies)
	}
	return cookies[0]
}

// withCookie calls h with the cookie and no Authorization header.
func withCookie(h http.Handler, c *http.Cookie, method, path, body string) int {
	req := newRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if c != nil {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func sessionHandler(t *testing.T, sessions *BrowserSessions) http.Handler {
	t.Helper()
	svc, _ := newTestService(t)
	return svc.Handler(HTTPOptions{Sessions: sessions, Tokens: []Token{
		{SHA256: sha256.Sum256([]byte(testToken)), Role: RoleAdmin},
		{SHA256: sha256.Sum256([]byte("orchestrator")), Role: RoleOrchestrator},
	}})
}

func TestSessions_CookieIsHttpOnlyStrictAndHoldsNoToken(t *testing.T) {
	h := sessionHandler(t, nil)
	c := login(t, h, false)
	if c.Name != SessionCookie || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || c.MaxAge <= 0 {
		t.Errorf("cookie = %+v", c)
	}
	if strings.Contains(c.Value, testToken) || len(c.Value) < 40 {
		t.Errorf("cookie value %q holds the token or is short", c.Value)
	}
	if c := login(t, h, true); !c.Secure {
		t.Errorf("a cookie set over TLS is not Secure: %+v", c)
	}
}

// A session stands for the token on GET and HEAD only: it never changes anything.
func TestSessions_AuthorizeReadsOnly(t *testing.T) {
	h := sessionHandler(t, nil)
	c := login(t, h, false)
	for _, path := range []string{"/v1/executions", "/v1/status", "/v1/openapi.json"} {
		if code := withCookie(h, c, http.MethodGet, path, ""); code != http.StatusOK {
			t.Errorf("GET %s with a session = %d, want 200", path, code)
		}
		if code := withCookie(h, c, http.MethodHead, path, ""); code != http.StatusOK {
			t.Errorf("HEAD %s with a session = %d, want 200", path, code)
		}
	}
	for path, body := range map[string]string{
		"/v1/hooks/before_planning": `{"request_id":"r","request":"x"}`,
		"/v1/operations/check":      `{"call":{"operation":"turn","request_id":"r"}}`,
	} {
		if code := withCookie(h, c, http.MethodPost, path, body); code != http.StatusUnauthorized {
			t.Errorf("POST %s with only a session = %d, want 401", path, code)
		}
	}
	if code := withCookie(h, loginAs(t, h, "orchestrator", false), http.MethodGet, "/v1/executions", ""); code != http.StatusForbidden {
		t.Errorf("GET /v1/executions with an orchestrator's session = %d, want 403: a session has its token's role", code)
	}
	forged := &http.Cookie{Name: SessionCookie, Value: strings.Repeat("A", 43)}
	if code := withCookie(h, forged, http.MethodGet, "/v1/status", ""); code != http.StatusUnauthorized {
		t.Errorf("GET with an unknown session = %d, want 401", code)
	}
}

func TestSessions_EndAtLogoutTTLAndBound(t *testing.T) {
	sessions := NewBrowserSessions(time.Hour, 2)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sessions.now = func() time.Time { return now }
	h := sessionHandler(t, sessions)

	c := login(t, h, false)
	req := newRequest(http.MethodDelete, "/v1/session", nil)
	req.AddCookie(c)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if cleared := rec.Result().Cookies(); rec.Code != http.StatusNoContent || len(cleared) != 1 || cleared[0].MaxAge >= 0 {
		t.Fatalf("log out = %d, cookies %v", rec.Code, cleared)
	}
	if code := withCookie(h, c, http.MethodGet, "/v1/status", ""); code != http.StatusUnauthorized {
		t.Errorf("GET after log out = %d, want 401", code)
	}

	c = login(t, h, false)
	now = now.Add(time.Hour)
	if code := withCookie(h, c, http.MethodGet, "/v1/status", ""); code != http.StatusUnauthorized {
		t.Errorf("GET after the session's TTL = %d, want 401", code)
	}

	first := login(t, h, false)
	now = now.Add(time.Minute)
	second, third := login(t, h, false), login(t, h, false)
	if code := withCookie(h, first, http.MethodGet, "/v1/status", ""); code != http.StatusUnauthorized {
		t.Errorf("the oldest of 3 sessions over a bound of 2 still works: %d", code)
	}
	for _, c := range []*http.Cookie{second, third} {
		if code := withCookie(h, c, http.MethodGet, "/v1/status", ""); code != http.StatusOK {
			t.Errorf("a session within the bound = %d, want 200", code)
		}
	}
}

// Without a token every route is open: logging in succeeds and opens no session.
func TestSessions_NoTokenNoSession(t *testing.T) {
	svc, _ := newTestService(t)
	h := svc.Handler(HTTPOptions{})
	req := newRequest(http.MethodPost, "/v1/session", strings.NewReader(`{"token":"anything"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent || len(rec.Result().Cookies()) != 0 {
		t.Errorf("log in without a configured token = %d, cookies %v", rec.Code, rec.Result().Cookies())
	}
}

// A call presenting two Authorization headers is refused 401, whichever order they
// come in: agentd would read the first, a proxy in front of it may have read the last.
func TestAuthorize_TwoAuthorizationHeadersAreRefused(t *testing.T) {
	h := stockHandler(t)
	for _, tokens := range [][]string{{viewerToken, testToken}, {testToken, viewerToken}, {testToken, testToken}} {
		req := newRequest(http.MethodGet, "/v1/status", nil)
		for _, tok := range tokens {
			req.Header.Add("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("two Authorization headers %v: %d %s, want 401", tokens, rec.Code, rec.Body)
		}
	}
	req := newRequest(http.MethodGet, "/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+viewerToken)
	rec := httptest.NewRecorder()
	if h.ServeHTTP(rec, req); rec.Code != http.StatusOK {
		t.Errorf("one Authorization header: %d %s, want 200", rec.Code, rec.Body)
	}
}
