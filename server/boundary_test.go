package server

import (
	"github.com/agentd-dev/agentd/api"

	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Every route, the API's and the mounted ones alike, refuses what a web page could
// make a browser send to a daemon on loopback with no token: forms and text/plain
// bodies, cross-site writes, and Host names of another site (DNS rebinding).
func TestBrowserBoundary_RefusesWhatAPageCouldSend(t *testing.T) {
	svc, _ := newTestService(t)
	mounted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	srv := httptest.NewServer(svc.Handler(HTTPOptions{AllowedHosts: []string{"agentd.internal"}, Mounts: []Mount{
		{Pattern: "POST /mounted", Handler: mounted},
		{Pattern: "GET /ui/page", Handler: mounted},
	}}))
	defer srv.Close()
	const bp = "/v1/hooks/before_planning"
	body := `{"request_id":"b1","request":"hello"}`
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		host                     string
		want                     int
		typ                      api.ErrorType // "" for an answer that is no error
	}{
		{"a JSON call from a program", "POST", bp, body, map[string]string{"Content-Type": "application/json"}, "", 200, ""},
		{"JSON with a charset", "POST", bp, body, map[string]string{"Content-Type": "application/json; charset=utf-8"}, "", 200, ""},
		{"a form post", "POST", bp, "request_id=b1", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "", 415, api.TypeUnsupportedMediaType},
		{"a multipart form", "POST", bp, "--x--", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, "", 415, api.TypeUnsupportedMediaType},
		{"a text/plain fetch", "POST", bp, body, map[string]string{"Content-Type": "text/plain"}, "", 415, api.TypeUnsupportedMediaType},
		{"no Content-Type", "POST", bp, body, nil, "", 415, api.TypeUnsupportedMediaType},
		{"a body declared gzip", "POST", bp, body, map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"}, "", 415, api.TypeUnsupportedMediaType},
		{"a body declared identity", "POST", bp, body, map[string]string{"Content-Type": "application/json", "Content-Encoding": "identity"}, "", 200, ""},
		{"a form post to a mounted route", "POST", "/mounted", "a=b", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "", 415, api.TypeUnsupportedMediaType},
		{"a JSON post to a mounted route", "POST", "/mounted", "{}", map[string]string{"Content-Type": "application/json"}, "", 204, ""},
		{"Sec-Fetch-Site cross-site", "POST", bp, body, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, "", 403, api.TypeCrossOrigin},
		{"Sec-Fetch-Site same-site", "POST", "/mounted", "{}", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}, "", 403, api.TypeCrossOrigin},
		{"Sec-Fetch-Site same-origin", "POST", "/mounted", "{}", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"}, "", 204, ""},
		{"a cross-site Origin", "POST", "/mounted", "{}", map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, "", 403, api.TypeCrossOrigin},
		{"a cross-site DELETE", "DELETE", "/v1/session", "", map[string]string{"Origin": "https://evil.example"}, "", 403, api.TypeCrossOrigin},
		{"a same-origin DELETE without a body", "DELETE", "/v1/session", "", nil, "", 204, ""},
		{"a cross-site GET reads nothing it could not anyway", "GET", "/ui/page", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, "", 204, ""},
		{"a rebound Host on a read", "GET", "/v1/status", "", nil, "evil.example:8181", 403, api.TypeHostForbidden},
		{"a rebound Host on the viewer", "GET", "/ui/page", "", nil, "evil.example", 403, api.TypeHostForbidden},
		{"a rebound Host on a health check", "GET", "/healthz", "", nil, "evil.example", 403, api.TypeHostForbidden},
		{"a rebound Host with its own Origin", "POST", "/mounted", "{}", map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, "evil.example", 403, api.TypeHostForbidden},
		{"localhost", "GET", "/healthz", "", nil, "localhost:8181", 200, ""},
		{"a name under .localhost", "GET", "/healthz", "", nil, "agentd.localhost", 200, ""},
		{"IPv6 loopback", "GET", "/healthz", "", nil, "[::1]:8181", 200, ""},
		{"an allowed host", "GET", "/healthz", "", nil, "AGENTD.internal:8181", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got struct {
				Error struct{ Type api.ErrorType } `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&got)
			if resp.StatusCode != tc.want || got.Error.Type != tc.typ {
				t.Fatalf("%s %s answered %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, got.Error.Type, tc.want, tc.typ)
			}
		})
	}
}

// A call that did not reach the server at a loopback address (a daemon listening on
// a routable address, behind its tokens) may name any Host.
func TestBrowserBoundary_HostIsCheckedOnLoopbackOnly(t *testing.T) {
	svc, _ := newTestService(t)
	h := svc.Handler(HTTPOptions{})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/healthz", nil) // no local address: not loopback
	req.Host = "agentd.example.com"
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /healthz with Host agentd.example.com off loopback answered %d %s", rec.Code, rec.Body)
	}
}
