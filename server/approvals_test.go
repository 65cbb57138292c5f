package server

import (
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A browser session decides an approval only with its CSRF token in X-Agentd-CSRF, and
// only a session of an approver (or admin) token: without the header, or with another
// value, the session does not count (401); a viewer's session is forbidden (403); a
// cross-origin call is refused at the boundary (403 cross_origin) whatever it sends.
func TestApprovals_SessionDecisionNeedsItsCSRFToken(t *testing.T) {
	sessions := NewBrowserSessions(0, 0)
	h, id := approvalHandlerWith(t, sessions)
	login := func(token string) *http.Cookie {
		req := newRequest(http.MethodPost, "/v1/session", strings.NewReader(`{"token":"`+token+`"}`))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent || len(rec.Result().Cookies()) != 1 {
			t.Fatalf("log in as %s: %d %s", token, rec.Code, rec.Body)
		}
		return rec.Result().Cookies()[0]
	}
	settingsOf := func(c *http.Cookie) string {
		// the session's CSRF token, as GET /ui/settings.json would give the page
		key := sha256.Sum256([]byte(c.Value))
		sessions.mu.Lock()
		defer sessions.mu.Unlock()
		return sessions.live[key].csrf
	}
	decide := func(c *http.Cookie, csrf, origin string) int {
		req := newRequest(http.MethodPost, "/v1/approvals/"+id, strings.NewReader(`{"decision":"approve","comment":"from the viewer"}`))
		req.AddCookie(c)
		if csrf != "" {
			req.Header.Set(CSRFHeader, csrf)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	approver := login(approverToken)
	viewer := login(viewerToken)
	csrf := settingsOf(approver)
	if csrf == "" {
		t.Fatal("the session has no CSRF token")
	}
	for name, c := range map[string]struct {
		cookie       *http.Cookie
		csrf, origin string
		want         int
	}{
		"no header":           {approver, "", "", http.StatusUnauthorized},
		"another value":       {approver, csrf + "x", "", http.StatusUnauthorized},
		"another origin":      {approver, csrf, "https://evil.example", http.StatusForbidden},
		"a viewer's session":  {viewer, settingsOf(viewer), "", http.StatusForbidden},
		"the session's token": {approver, csrf, "http://example.com", http.StatusOK},
	} {
		if got := decide(c.cookie, c.csrf, c.origin); got != c.want {
			t.Errorf("%s: %d, want %d", name, got, c.want)
		}
	}
}
