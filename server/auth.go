package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/api"

	"github.com/agentd-dev/agentd/engine"
)

// Role is what a bearer token may call. Every route names the role it needs (see
// Handler); an admin token may call every route.
type Role string

// Roles.
const (
	// RoleAdmin may call every route.
	RoleAdmin Role = "admin"
	// RoleOrchestrator makes stage calls, operation checks and finishes, and calls the
	// gateways.
	RoleOrchestrator Role = "orchestrator"
	// RoleViewer reads: execution records, status, metrics and the records UI.
	RoleViewer Role = "viewer"
	// RoleApprover decides approvals (POST /v1/approvals/{id}) and reads what a viewer
	// reads.
	RoleApprover Role = "approver"
)

// Token is one accepted bearer token, kept as the SHA-256 of its text.
type Token struct {
	SHA256 [sha256.Size]byte
	Role   Role
	// Tenant, when set, confines the token's calls to the requests whose
	// metadata.tenant is Tenant (engine.WithTenant), and its reads to their records.
	Tenant string
	// Name names the token where a decision it made is recorded (an approval's
	// decided_by); "" names it by its digest's prefix.
	Name string
}

// label is how records name the token: its name, or "sha256:" and the first 12 hex
// digits of its digest.
func (t Token) label() string {
	if t.Name != "" {
		return t.Name
	}
	return "sha256:" + hex.EncodeToString(t.SHA256[:6])
}

// may reports whether a token of role r may call a route that needs role: an admin
// every route, an approver the viewer's too.
func (r Role) may(route Role) bool {
	return r == RoleAdmin || r == route || r == RoleApprover && route == RoleViewer
}

// tokenOf returns the token whose text the Authorization header presents as a bearer
// token. Every token is compared, in constant time, whatever matched.
func tokenOf(tokens []Token, header string) (Token, bool) {
	scheme, text, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || text == "" {
		return Token{}, false
	}
	sum := sha256.Sum256([]byte(text))
	found := -1
	for i := range tokens {
		if subtle.ConstantTimeCompare(sum[:], tokens[i].SHA256[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Token{}, false
	}
	return tokens[found], true
}

// authorize admits a call of a route that needs role: with no tokens configured every
// call; otherwise a call presenting a token whose role may call the route, confined to
// the token's tenant when it has one. A GET or HEAD may present, instead of a token,
// the cookie of a session the token opened (see BrowserSessions). A call without a valid
// token is answered 401 and its connection closed, its body never read (a browser
// loading a page is sent to opts.LoginPage instead, when set), as is a call with more
// than one Authorization header (a proxy in front may have read another than agentd);
// a token whose role may not call the route is answered 403 forbidden.
func authorize(opts HTTPOptions, role Role, next http.Handler) http.Handler {
	return authorizeWith(opts, role, false, next)
}

// authorizeWrites is authorize for a route a browser session may also call with a
// method that changes state (the viewer's approve and reject): the call must send the
// session's CSRF token in CSRFHeader (compared in constant time), and the browser
// boundary has checked its Origin. Without the header the session does not count.
func authorizeWrites(opts HTTPOptions, role Role, next http.Handler) http.Handler {
	return authorizeWith(opts, role, true, next)
}

func authorizeWith(opts HTTPOptions, role Role, sessionWrites bool, next http.Handler) http.Handler {
	if len(opts.Tokens) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values("Authorization")) > 1 { // which one counts is up to each reader: none does
			refuseUnauthenticated(w)
			return
		}
		tok, ok := tokenOf(opts.Tokens, r.Header.Get("Authorization"))
		csrf := ""
		if !ok && (safe(r) || sessionWrites) {
			var se browserSession
			if se, ok = opts.Sessions.session(r); ok {
				tok, csrf = se.token, se.csrf
				sent := r.Header.Get(CSRFHeader)
				ok = safe(r) || sent != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(se.csrf)) == 1
			}
		}
		switch {
		case !ok && safe(r) && opts.LoginPage != "" && navigation(r):
			http.Redirect(w, r, opts.LoginPage+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		case !ok:
			refuseUnauthenticated(w)
			return
		case !tok.Role.may(role):
			writeError(w, api.Errorf(http.StatusForbidden, api.TypeForbidden, "a %s token may not call %s %s", tok.Role, r.Method, r.URL.Path).
				With("role", tok.Role).With("required_role", role))
			return
		}
		ctx := context.WithValue(r.Context(), callerKey{}, string(tok.SHA256[:]))
		ctx = context.WithValue(ctx, deciderKey{}, tok.label())
		ctx = context.WithValue(ctx, roleKey{}, tok.Role)
		if csrf != "" {
			ctx = context.WithValue(ctx, csrfKey{}, csrf)
		}
		if tok.Tenant != "" {
			ctx = engine.WithTenant(ctx, tok.Tenant)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

type callerKey struct{}

type deciderKey struct{}

// DeciderOf names the token a call authorize admitted presented, as records name who
// decided (Token.Name, or its digest's prefix); "anonymous" when the daemon has no
// tokens.
func DeciderOf(ctx context.Context) string {
	if d, ok := ctx.Value(deciderKey{}).(string); ok {
		return d
	}
	return "anonymous"
}

// CallerOf names the token a call authorize admitted presented, itself or through a
// browser session it opened: an opaque key, the same for every call of one token and
// never the token's text; "" when the daemon has no tokens (every caller is one).
func CallerOf(ctx context.Context) string {
	c, _ := ctx.Value(callerKey{}).(string)
	return c
}

// refuseUnauthenticated answers 401 and closes the connection without reading the
// request body: the read deadline passes at once, so the server drains nothing.
func refuseUnauthenticated(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	w.Header().Set("WWW-Authenticate", `Bearer realm="agentd"`)
	w.Header().Set("Connection", "close")
	writeError(w, api.Errorf(http.StatusUnauthorized, api.TypeUnauthorized, "missing or wrong bearer token"))
}
