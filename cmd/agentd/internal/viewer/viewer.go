// Package viewer is agentd's records viewer, served by the daemon at /ui/: a list of
// execution records with the filters of GET /v1/executions and their tenants, a page
// per request (Pre-Execution: the refused operation checks, before_planning and each
// phase's after_planning invocations with what their warn and audit rules would have
// denied, the plan of each phase as a graph with its denied steps marked and each
// executed step's result labels as chips, rejected candidates; Post-Execution:
// after_execution, after_synthesis, effects, operation checks with their findings,
// the labels that decided them and their finishes with their result's labels), and a
// page on the live config. It is plain HTML, CSS and JavaScript embedded in the binary; the pages
// read the API (GET /v1/executions, /v1/executions/{id}, /v1/status) and the viewer's
// own GET /ui/graphs/{id}. The approvals page (#/approvals) lists GET /v1/approvals and,
// for approver and admin sessions, decides with POST /v1/approvals/{id}, the viewer's one
// write, sent with the session's CSRF token from /ui/settings.json.
//
// Every value is put into the page as text (textContent, never markup), and every
// answer carries a Content-Security-Policy that allows scripts, styles and requests
// of this origin only: no inline script, no eval, no other origin.
package viewer

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"

	"github.com/agentd-dev/agentd/server"
)

//go:embed assets
var assets embed.FS

// Paths of the viewer.
const (
	// Root is the viewer's start page.
	Root = "/ui/"
	// LoginPage is where a browser without a session is sent.
	LoginPage = "/ui/public/login.html"
)

// ContentSecurityPolicy is sent with every answer of the viewer.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// Options configure the viewer.
type Options struct {
	// Service reads the records the graphs are drawn from.
	Service *server.Service
	// TraceURL is the template of each invocation's trace link (see
	// TracePlaceholders); empty shows no links. CheckTraceURL it first.
	TraceURL string
}

// Settings is GET /ui/settings.json: what the pages need to know of the daemon.
type Settings struct {
	TraceURL string `json:"trace_url,omitempty"`
	// Role is the role of the token behind the page's session; CSRF the session's
	// CSRF token, which the page sends back with a decision (server.CSRFHeader).
	Role string `json:"role,omitempty"`
	CSRF string `json:"csrf,omitempty"`
}

// Mounts returns the viewer's routes: its pages, scripts and data for viewer tokens
// (and their sessions), and the login page and what it loads, public.
func Mounts(opts Options) []server.Mount {
	private, _ := fs.Sub(assets, "assets/private")
	public, _ := fs.Sub(assets, "assets/public")
	return []server.Mount{
		{Pattern: "GET /ui/", Role: server.RoleViewer, Handler: secure(http.StripPrefix("/ui/", http.FileServerFS(private)))},
		{Pattern: "GET /ui/public/", Public: true, Handler: secure(http.StripPrefix("/ui/public/", http.FileServerFS(public)))},
		{Pattern: "GET /ui/settings.json", Role: server.RoleViewer, Handler: secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, Settings{TraceURL: opts.TraceURL, Role: string(server.RoleOf(r.Context())), CSRF: server.CSRFOf(r.Context())})
		}))},
		{Pattern: "GET /ui/graphs/{id}", Role: server.RoleViewer, Handler: secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec, e := opts.Service.Execution(r.Context(), r.PathValue("id"))
			if e != nil {
				writeJSON(w, e.Status, e)
				return
			}
			writeJSON(w, http.StatusOK, Graphs(rec))
		}))},
	}
}

// secure adds the viewer's security headers to every answer of h.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
