package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/api"
)

// SessionCookie is the cookie that holds a browser's session id.
const SessionCookie = "agentd_session"

// Session defaults.
const (
	DefaultSessionTTL  = 12 * time.Hour
	DefaultMaxSessions = 10_000
)

// BrowserSessions are the browser sessions of the records viewer (not engine.Session,
// which is one request's stage calls). A browser opens one with
// an API token (POST /v1/session) and gets a random session id in an HttpOnly,
// SameSite=Strict cookie (Secure over TLS); the cookie never holds the token. A
// session stands for the token that opened it (its role and tenant) on safe calls
// (GET and HEAD), so it reads records, status and the viewer, and on the routes that
// take writes from the viewer (deciding an approval) only with its CSRF token in the
// X-Agentd-CSRF header, which no page of another origin can read; the browser boundary
// checks such a call's Origin, and the cookie is SameSite=Strict, so a forged
// cross-site request can do nothing with it. Sessions live in this process: they end
// when it restarts, at their TTL, or at DELETE /v1/session; replicas do not share
// them. BrowserSessions is safe for concurrent use.
type BrowserSessions struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu sync.Mutex
	// live holds each session, keyed by the SHA-256 of its id, so that the ids
	// themselves are nowhere but in the browsers.
	live map[[sha256.Size]byte]browserSession
}

// browserSession is the token that opened a session, when the session ends, and its CSRF
// token: the value a state-changing call made with the session must send in the
// X-Agentd-CSRF header (see authorizeWrites).
type browserSession struct {
	token Token
	end   time.Time
	csrf  string
}

// CSRFHeader is the header a state-changing call made with a browser session sends
// the session's CSRF token in (CSRFOf).
const CSRFHeader = "X-Agentd-CSRF"

// NewBrowserSessions returns an empty session store whose sessions last ttl (0 means
// DefaultSessionTTL); at most max live at once (0 means DefaultMaxSessions), the
// oldest ending first.
func NewBrowserSessions(ttl time.Duration, max int) *BrowserSessions {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	if max <= 0 {
		max = DefaultMaxSessions
	}
	return &BrowserSessions{ttl: ttl, max: max, now: time.Now, live: map[[sha256.Size]byte]browserSession{}}
}

// open starts a session of tok and sets its cookie on w.
func (s *BrowserSessions) open(w http.ResponseWriter, r *http.Request, tok Token) {
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	_, _ = rand.Read(raw[:])
	csrf := base64.RawURLEncoding.EncodeToString(raw[:])
	now := s.now()
	s.mu.Lock()
	if len(s.live) >= s.max {
		s.evict(now)
	}
	s.live[sha256.Sum256([]byte(id))] = browserSession{token: tok, end: now.Add(s.ttl), csrf: csrf}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/", MaxAge: int(s.ttl / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// evict ends the expired sessions, and the one closest to its end if none was. The
// caller holds s.mu.
func (s *BrowserSessions) evict(now time.Time) {
	var first [sha256.Size]byte
	var firstEnd time.Time
	n := len(s.live)
	for k, se := range s.live {
		if !now.Before(se.end) {
			delete(s.live, k)
		} else if firstEnd.IsZero() || se.end.Before(firstEnd) {
			first, firstEnd = k, se.end
		}
	}
	if len(s.live) == n {
		delete(s.live, first)
	}
}

// session returns the live session r's cookie names; a nil BrowserSessions has none.
func (s *BrowserSessions) session(r *http.Request) (browserSession, bool) {
	if s == nil {
		return browserSession{}, false
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return browserSession{}, false
	}
	key := sha256.Sum256([]byte(c.Value))
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.live[key]
	if ok && !s.now().Before(se.end) {
		delete(s.live, key)
		return browserSession{}, false
	}
	return se, ok
}

// close ends the session of r, if any, and clears its cookie.
func (s *BrowserSessions) close(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		s.mu.Lock()
		delete(s.live, sha256.Sum256([]byte(c.Value)))
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// safe reports whether r's method only reads.
func safe(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

// navigation reports whether r is a browser loading a page (not a script's fetch).
func navigation(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Mode") == "navigate" ||
		r.Header.Get("Sec-Fetch-Mode") == "" && acceptsHTML(r.Header.Get("Accept"))
}

func acceptsHTML(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		if mt, _, err := mime.ParseMediaType(part); err == nil && mt == "text/html" {
			return true
		}
	}
	return false
}

// csrfKey carries the CSRF token of the session a call was admitted with.
type csrfKey struct{}

// CSRFOf returns the CSRF token of the browser session a call authorize admitted
// through its cookie, for a page to send back in CSRFHeader; "" for a call made with a
// bearer token.
func CSRFOf(ctx context.Context) string {
	c, _ := ctx.Value(csrfKey{}).(string)
	return c
}

// RoleOf returns the role of the token a call authorize admitted presented (itself or
// through its session); "" when the daemon has no tokens.
func RoleOf(ctx context.Context) Role {
	r, _ := ctx.Value(roleKey{}).(Role)
	return r
}

type roleKey struct{}

// SessionRequest is the body of POST /v1/session.
type SessionRequest struct {
	Token string `json:"token"`
}

// serveSessions serves POST /v1/session (log in: the token in a JSON body, which a
// cross-site form cannot send, as browserBoundary checks; 204 and the cookie, or 401) and DELETE /v1/session (log
// out: 204, the session ended and its cookie cleared). Neither needs a token in the
// Authorization header. With no token configured, logging in opens no session: every
// route is open anyway.
func serveSessions(mux *apiMux, opts HTTPOptions) {
	sessions := opts.Sessions
	mux.serve("POST /v1/session", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req SessionRequest
		if e := decodeBody(r.Body, opts.MaxBody, &req); e != nil {
			writeError(w, e)
			return
		}
		if req.Token == "" {
			writeError(w, missing("token"))
			return
		}
		if len(opts.Tokens) > 0 {
			tok, ok := tokenOf(opts.Tokens, "Bearer "+req.Token)
			if !ok {
				writeError(w, api.Errorf(http.StatusUnauthorized, api.TypeUnauthorized, "wrong token"))
				return
			}
			sessions.open(w, r, tok)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.serve("DELETE /v1/session", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sessions.close(w, r)
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.Handle("/v1/session", methodNotAllowed("POST, DELETE"))
}
