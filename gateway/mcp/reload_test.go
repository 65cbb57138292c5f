package mcp

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGateway_ReloadRestartsOnlyTheChangedUpstream: a new generation that changes one
// upstream's environment restarts that upstream alone; sessions stay open and hear
// that the tool list may have changed.
func TestGateway_ReloadRestartsOnlyTheChangedUpstream(t *testing.T) {
	servers := stdioServer("local", "") + stdioServer("other", "")
	h := newHarness(t, servers)
	h.waitReady("local", "other")
	c := h.connect()
	localPID, otherPID := text(c.call(t, "local__pid", nil)), text(c.call(t, "other__pid", nil))

	h.configure(stdioServer("local", "") + strings.Replace(stdioServer("other", ""), "MARKER: explicit", "MARKER: changed", 1))
	select {
	case <-c.toolsChanged:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed after the reload")
	}
	h.waitReady("local", "other")
	if got := text(c.call(t, "local__pid", nil)); got != localPID {
		t.Errorf("the unchanged upstream was restarted: pid %s, was %s", got, localPID)
	}
	if got := text(c.call(t, "other__pid", nil)); got == otherPID {
		t.Errorf("the changed upstream still runs as pid %s", got)
	}
	if got := text(c.call(t, "local__echo", map[string]any{"message": "same session"})); got != "Echo: same session (from local)" {
		t.Errorf("the session after the reload: %q", got)
	}
}

// TestGateway_ReloadChangesSettingsInPlace: pass-through settings and removed servers
// apply without restarting the servers that stay.
func TestGateway_ReloadChangesSettingsInPlace(t *testing.T) {
	h := newHarness(t, stdioServer("local", "")+stdioServer("other", ""))
	h.waitReady("local", "other")
	c := h.connect()
	pid := text(c.call(t, "local__pid", nil))

	h.configure(strings.Replace(stdioServer("local", ""), "prompts: [greet]", "prompts: ['*']", 1))
	h.waitFor("other removed", func(st Status) bool { return len(st.Servers) == 1 })
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(c.tools(t), "pid") { // no collision left: names are bare again
		if time.Now().After(deadline) {
			t.Fatalf("tools after removing other: %v", c.tools(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := text(c.call(t, "pid", nil)); got != pid {
		t.Errorf("a settings change restarted the upstream: pid %s, was %s", got, pid)
	}
	var prompts []string
	for p, err := range c.Prompts(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	slices.Sort(prompts)
	if !slices.Equal(prompts, []string{"greet", "secret-prompt"}) {
		t.Errorf("prompts after allowing all = %v", prompts)
	}
}

func TestGateway_StdioEnvironmentIsExplicit(t *testing.T) {
	t.Setenv("AGENTD_MCP_TEST_LEAK", "must not leak")
	t.Setenv("AGENTD_MCP_TEST_PASSED", "passed")
	h := newHarness(t, stdioServer("local", "        env_pass: [AGENTD_MCP_TEST_PASSED]\n"))
	h.waitReady("local")
	c := h.connect()
	for name, want := range map[string]string{
		"MARKER": "explicit", "AGENTD_MCP_TEST_PASSED": "passed", "AGENTD_MCP_TEST_LEAK": "", "PATH": "", "HOME": "",
	} {
		if got := text(c.call(t, "env", map[string]any{"name": name})); got != want {
			t.Errorf("the upstream's %s = %q, want %q", name, got, want)
		}
	}
}

func TestGateway_HTTPHeadersFromTheEnvironment(t *testing.T) {
	up := newHTTPUpstream(t, "web", "s3cret-token")
	t.Setenv("AGENTD_MCP_TEST_TOKEN", "Bearer s3cret-token")
	headers := "        headers_env: {Authorization: AGENTD_MCP_TEST_TOKEN}\n"
	h := newHarness(t, httpServer("web", up.url(), headers)+
		strings.Replace(httpServer("unset", up.url(), headers), "AGENTD_MCP_TEST_TOKEN", "AGENTD_MCP_TEST_UNSET", 1))
	h.waitReady("web")
	st := h.waitFor("unset failing", func(st Status) bool { return st.Servers[1].State == stateRestarting })
	if !strings.Contains(st.Servers[1].LastError, "AGENTD_MCP_TEST_UNSET is not set") {
		t.Errorf("status of the upstream without its header = %+v", st.Servers[1])
	}
	c := h.connect()
	if res := c.call(t, "echo", map[string]any{"message": "auth"}); res.IsError {
		t.Fatalf("echo through the authorized upstream: %q", text(res))
	}
	if strings.Contains(h.logs.String(), "s3cret") {
		t.Error("the header value is in the log")
	}
}

// An HTTP upstream that redirects to another origin never gets the secret header
// there: the gateway follows no cross-origin redirect, so the upstream stays down,
// while a redirect within the upstream's origin is followed.
func TestGateway_HTTPHeadersFollowNoCrossOriginRedirect(t *testing.T) {
	up := newHTTPUpstream(t, "web", "s3cret-token")
	t.Setenv("AGENTD_MCP_TEST_TOKEN", "Bearer s3cret-token")
	headers := "        headers_env: {Authorization: AGENTD_MCP_TEST_TOKEN}\n"
	var leaked atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	closeLater(t, elsewhere)
	// 127.0.0.1 and localhost are other origins of the same process: the upstream
	// answers both, so only the policy keeps the header from the second.
	cross := httptest.NewServer(http.RedirectHandler(strings.Replace(up.url(), "127.0.0.1", "localhost", 1), http.StatusTemporaryRedirect))
	closeLater(t, cross)
	away := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/mcp", http.StatusTemporaryRedirect))
	closeLater(t, away)
	same := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
			return
		}
		httputil.NewSingleHostReverseProxy(mustParse(t, up.url())).ServeHTTP(w, r)
	}))
	closeLater(t, same)
	h := newHarness(t, httpServer("cross", cross.URL, headers)+httpServer("away", away.URL, headers)+httpServer("same", same.URL+"/old", headers))
	h.waitReady("same")
	st := h.waitFor("the redirected upstreams failing", func(st Status) bool {
		return st.Servers[0].State == stateRestarting && st.Servers[1].State == stateRestarting
	})
	for _, s := range st.Servers[:2] {
		if !strings.Contains(s.LastError, "refused a redirect to another origin") {
			t.Errorf("%s: last error %q, want a refused redirect", s.Name, s.LastError)
		}
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the header reached another origin %d times", n)
	}
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = ""
	return u
}

// closeLater closes srv when the test ends, after the gateway (whose cleanup is
// registered later, so runs first) has closed its streams.
func closeLater(t *testing.T, srv *httptest.Server) {
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
}
