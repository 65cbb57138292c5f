package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/engine"
)

type callerKey struct{}

// callerServer serves the harness's gateway behind an authorization that names the
// caller its X-Caller header says (as the daemon names a token) and confines it to
// the tenant X-Tenant names.
func callerServer(t *testing.T, h *harness) *httptest.Server {
	t.Helper()
	handler := h.gw.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), callerKey{}, r.Header.Get("X-Caller"))
		if tenant := r.Header.Get("X-Tenant"); tenant != "" {
			ctx = engine.WithTenant(ctx, tenant)
		}
		handler.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

func callerOf(ctx context.Context) string { s, _ := ctx.Value(callerKey{}).(string); return s }

// as is a client whose requests carry the headers given (X-Caller, X-Tenant).
func as(headers ...string) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
}

// rawPost posts one JSON-RPC message to url as client, on session (none for "").
func rawPost(t *testing.T, client *http.Client, url, session, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Error struct{ Type string } }
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error.Type
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

// One caller cannot hold more than its share of sessions, nor all callers together
// more than the gateway's bound, whatever they post: a session closed (DELETE) or
// idle past the timeout gives its slot back.
func TestGateway_SessionsAreBounded(t *testing.T) {
	h := newHarnessWith(t, stdioServer("local", ""), func(c *Config) {
		c.MaxSessions, c.MaxSessionsPerCaller, c.Caller = 5, 3, callerOf
	})
	h.waitReady("local")
	srv := callerServer(t, h)
	ctx := context.Background()
	connect := func(caller string) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: caller, Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: as("X-Caller", caller), DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	}
	var alice []*mcp.ClientSession
	for range 3 {
		cs, err := connect("alice")
		if err != nil {
			t.Fatalf("alice's session %d: %v", len(alice)+1, err)
		}
		alice = append(alice, cs)
	}
	if _, err := connect("alice"); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("alice's fourth session: %v, want 429 Too Many Requests", err)
	}
	// Raw posts of every kind without a session id open nothing past the bound.
	for _, body := range []string{initialize, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":3,"method":"ping"}`} {
		if code, typ := rawPost(t, as("X-Caller", "alice"), srv.URL, "", body); code != http.StatusTooManyRequests || typ != "too_many_sessions" {
			t.Errorf("alice's raw %s past her bound = %d %q, want 429 too_many_sessions", body, code, typ)
		}
	}
	for range 2 {
		if code, _ := rawPost(t, as("X-Caller", "bob"), srv.URL, "", initialize); code != http.StatusOK {
			t.Fatalf("bob's session = %d", code)
		}
	}
	if code, typ := rawPost(t, as("X-Caller", "carol"), srv.URL, "", initialize); code != http.StatusTooManyRequests || typ != "too_many_sessions" {
		t.Fatalf("carol's session past the gateway's bound = %d %q, want 429 too_many_sessions", code, typ)
	}
	if n := countSessions(h.gw); n != 5 {
		t.Errorf("the transport holds %d sessions, want 5", n)
	}
	if st := h.gw.Status(ctx).Sessions; st.Open != 5 || st.Max != 5 || st.MaxPerCaller != 3 || st.IdleTimeout != DefaultSessionIdle.String() {
		t.Errorf("status sessions = %+v", st)
	}
	if err := alice[0].Close(); err != nil { // DELETE /mcp
		t.Fatal(err)
	}
	h.waitFor("alice's closed session to give its slot back", func(st Status) bool { return st.Sessions.Open == 4 })
	if code, _ := rawPost(t, as("X-Caller", "carol"), srv.URL, "", initialize); code != http.StatusOK {
		t.Fatalf("carol's session once one closed = %d", code)
	}
	for _, cs := range alice[1:] {
		_ = cs.Close()
	}
}

func countSessions(g *Gateway) int {
	n := 0
	for range g.server.Sessions() {
		n++
	}
	return n
}

// A session nobody calls is closed after the idle timeout, and its slot is free again.
func TestGateway_IdleSessionsClose(t *testing.T) {
	h := newHarnessWith(t, stdioServer("local", ""), func(c *Config) {
		c.MaxSessionsPerCaller, c.SessionTimeout = 1, 100*time.Millisecond
	})
	h.waitReady("local")
	if code, _ := rawPost(t, http.DefaultClient, h.url, "", initialize); code != http.StatusOK {
		t.Fatalf("first session = %d", code)
	}
	h.waitFor("the idle session to close", func(st Status) bool { return st.Sessions.Open == 0 && countSessions(h.gw) == 0 })
	if code, _ := rawPost(t, http.DefaultClient, h.url, "", initialize); code != http.StatusOK {
		t.Fatalf("a session once the idle one closed = %d", code)
	}
}

// A session is the caller's that opened it: another caller, of the same tenant or
// none, naming its id is answered 404 as for no session, and the session goes on.
func TestGateway_SessionsBelongToTheirCaller(t *testing.T) {
	h := newHarnessWith(t, stdioServer("local", ""), func(c *Config) { c.Caller = callerOf })
	h.waitReady("local")
	srv := callerServer(t, h)
	ctx := context.Background()
	var opened string
	owner := as("X-Caller", "alice", "X-Tenant", "acme")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true, HTTPClient: &http.Client{
			Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := owner.Transport.RoundTrip(r)
				if err == nil && opened == "" {
					opened = resp.Header.Get("Mcp-Session-Id")
				}
				return resp, err
			})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tc := range []struct {
		name   string
		client *http.Client
	}{
		{"another caller of the tenant", as("X-Caller", "mallory", "X-Tenant", "acme")},
		{"another caller of no tenant", as("X-Caller", "mallory")},
		{"the caller confined to another tenant", as("X-Caller", "alice", "X-Tenant", "globex")},
		{"the caller unconfined", as("X-Caller", "alice")},
	} {
		if code, typ := rawPost(t, tc.client, srv.URL, opened, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`); code != http.StatusNotFound || typ != "not_found" {
			t.Errorf("%s on alice's session = %d %q, want 404 not_found", tc.name, code, typ)
		}
	}
	if code, typ := rawPost(t, as("X-Caller", "alice", "X-Tenant", "acme"), srv.URL, "ffff", `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`); code != http.StatusNotFound || typ != "not_found" {
		t.Errorf("a session nobody opened = %d %q, want 404 not_found", code, typ)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "still mine"}})
	if err != nil || res.IsError {
		t.Fatalf("alice's own call after the refusals: %v %q", err, text(res))
	}
}

// /mcp bounds request bodies by Config.MaxBody.
func TestGateway_BodiesAreBounded(t *testing.T) {
	h := newHarnessWith(t, stdioServer("local", ""), func(c *Config) { c.MaxBody = 1024 })
	h.waitReady("local")
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + strings.Repeat("x", 2048) + `","version":"1"}}}`
	if code, _ := rawPost(t, http.DefaultClient, h.url, "", big); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body of %d bytes past a bound of 1024 = %d, want 413", len(big), code)
	}
	if code, _ := rawPost(t, http.DefaultClient, h.url, "", initialize); code != http.StatusOK {
		t.Fatalf("a small body = %d", code)
	}
	if st := h.gw.Status(context.Background()).Sessions; st.Open != 1 {
		t.Errorf("sessions open after a refused and an accepted initialize = %d, want 1", st.Open)
	}
}

// Arguments that repeat a member name are refused (ambiguous_parameters) before any
// review: decoded, the last one wins, where the client (or a proxy reading the
// first) may have meant the other; the upstream sees nothing.
func TestGateway_RepeatedArgumentIsRefused(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	srv := callerServer(t, h)
	send := func(session, body string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, string(data)
	}
	resp, _ := send("", initialize)
	session := resp.Header.Get("Mcp-Session-Id")
	send(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, args := range []string{`{"message":"forbidden","message":"hi"}`, `{"message":"hi","nested":{"a":1,"\u0061":2}}`} {
		_, body := send(session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":`+args+`}}`)
		if !strings.Contains(body, `"code":"ambiguous_parameters"`) || !strings.Contains(body, `"isError":true`) {
			t.Errorf("echo with %s = %s, want the ambiguous_parameters refusal", args, body)
		}
	}
	if calls := h.upstreamCalls(); calls != nil {
		t.Errorf("the upstream saw %v", calls)
	}
}
