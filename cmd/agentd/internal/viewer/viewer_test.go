package viewer_test

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/api"
	"github.com/agentd-dev/agentd/cmd/agentd/internal/viewer"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/server"
)

// The daemon's tokens: a viewer's and an admin's.
const (
	token      = "t0ken"
	adminToken = "admin-t0ken"
)

// daemon serves the API and the viewer on the stock example, as agentd serve does.
func daemon(t *testing.T) http.Handler {
	t.Helper()
	gen, err := config.Load(filepath.Join("..", "..", "..", "..", "examples", "stock-agent"), config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	registry := reload.NewRegistry(2)
	registry.Swap(gen)
	mem := store.NewMemory(store.MemoryOptions{})
	driver, err := engine.NewDriver(engine.DriverConfig{Generations: registry, States: mem, Records: mem, KeepPlans: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := server.New(server.Config{Registry: registry, Driver: driver, Records: mem})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Handler(server.HTTPOptions{Tokens: []server.Token{
		{SHA256: sha256.Sum256([]byte(token)), Role: server.RoleViewer}, {SHA256: sha256.Sum256([]byte(adminToken)), Role: server.RoleAdmin}}, LoginPage: viewer.LoginPage,
		Mounts: viewer.Mounts(viewer.Options{Service: svc, TraceURL: "https://traces.example/t/{trace_id}"})})
}

func get(t *testing.T, h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

var bearer = []string{"Authorization", "Bearer " + token}

// Every answer of the viewer carries its security headers; the pages and data need
// the token, the login page does not.
func TestViewer_AnswersCarryThePolicy(t *testing.T) {
	h := daemon(t)
	for _, c := range []struct {
		path   string
		auth   bool
		status int
		ctype  string
	}{
		{"/ui/", true, 200, "text/html"},
		{"/ui/app.js", true, 200, "text/javascript"},
		{"/ui/settings.json", true, 200, "application/json"},
		{"/ui/graphs/nobody", true, 404, "application/json"},
		{"/ui/public/login.html", false, 200, "text/html"},
		{"/ui/public/login.js", false, 200, "text/javascript"},
		{"/ui/public/style.css", false, 200, "text/css"},
	} {
		var rec *httptest.ResponseRecorder
		if c.auth {
			if rec = get(t, h, c.path); rec.Code != http.StatusUnauthorized {
				t.Errorf("GET %s without a token = %d, want 401", c.path, rec.Code)
			}
			rec = get(t, h, c.path, bearer...)
		} else {
			rec = get(t, h, c.path)
		}
		if rec.Code != c.status || !strings.HasPrefix(rec.Header().Get("Content-Type"), c.ctype) {
			t.Errorf("GET %s = %d %s, want %d %s", c.path, rec.Code, rec.Header().Get("Content-Type"), c.status, c.ctype)
		}
		for k, v := range map[string]string{"Content-Security-Policy": viewer.ContentSecurityPolicy, "X-Content-Type-Options": "nosniff",
			"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
			if got := rec.Header().Get(k); got != v {
				t.Errorf("GET %s: %s = %q, want %q", c.path, k, got, v)
			}
		}
	}
	if !strings.Contains(viewer.ContentSecurityPolicy, "script-src 'self';") || strings.Contains(viewer.ContentSecurityPolicy, "unsafe") {
		t.Errorf("the policy allows more than this origin's scripts: %s", viewer.ContentSecurityPolicy)
	}
	var s viewer.Settings
	if err := json.Unmarshal(get(t, h, "/ui/settings.json", bearer...).Body.Bytes(), &s); err != nil || s.TraceURL != "https://traces.example/t/{trace_id}" {
		t.Errorf("settings = %+v, %v", s, err)
	}
	var e struct {
		Error struct{ Type api.ErrorType }
	}
	if err := json.Unmarshal(get(t, h, "/ui/graphs/nobody", bearer...).Body.Bytes(), &e); err != nil || e.Error.Type != api.TypeNotFound {
		t.Errorf("graphs of an unknown request: %+v, %v", e, err)
	}
}

// A browser loading a page without a session is sent to the login page; a script's
// call is answered 401.
func TestViewer_BrowsersWithoutASessionGoToTheLoginPage(t *testing.T) {
	h := daemon(t)
	rec := get(t, h, "/ui/", "Sec-Fetch-Mode", "navigate", "Accept", "text/html")
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != viewer.LoginPage+"?next=%2Fui%2F" {
		t.Errorf("navigation without a session = %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	if rec := get(t, h, "/ui/settings.json", "Sec-Fetch-Mode", "cors"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a script's call without a session = %d, want 401", rec.Code)
	}
}

func TestCheckTraceURL(t *testing.T) {
	for tmpl, ok := range map[string]bool{
		"http://jaeger:16686/trace/{trace_id}":                            true,
		"https://grafana.example/explore?left={trace_id}&span={span_id}":  true,
		"http://jaeger:16686/search?service=agentd&operation={span_name}": true,
		"http://x.example/{hook}/{stage}/{request_id}":                    true,
		"http://jaeger:16686/trace/{traceid}":                             false,
		"javascript:alert({trace_id})":                                    false,
		"/trace/{trace_id}":                                               false,
		"ftp://x.example/{trace_id}":                                      false,
		"http://{trace_id}.example/":                                      true,
		"http:// bad host/{trace_id}":                                     false,
	} {
		if err := viewer.CheckTraceURL(tmpl); (err == nil) != ok {
			t.Errorf("CheckTraceURL(%q) = %v, want ok %v", tmpl, err, ok)
		}
	}
}
