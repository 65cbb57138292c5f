package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/docs"
	"github.com/agentd-dev/agentd/engine"
)

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Token, when set, is the bearer token every route but /healthz and /readyz needs.
	Token string
	// MaxBody bounds request bodies; 0 means 1 MiB.
	MaxBody int64
	// Metrics serves /metrics; nil answers 404.
	Metrics http.Handler
	// Mounts are further routes served beside the API (the gateways, the viewer),
	// behind the same authorization and panic recovery.
	Mounts []Mount
	// Sessions are the browser sessions that stand for the token on GET and HEAD
	// calls (see Sessions); nil means a store of this handler's own.
	Sessions *Sessions
	// LoginPage, when set, is where a browser loading a page without a token or a
	// session is sent (303), instead of answered 401.
	LoginPage string
}

// Mount is one further route: a ServeMux pattern ("POST /v1/chat/completions",
// "/mcp", "GET /ui/") and its handler. The handler bounds its own request bodies.
// docs/openapi.yaml documents every mounted route like the API's own; the route test
// checks the patterns listed in its mountedRoutes.
type Mount struct {
	Pattern string
	Handler http.Handler
	// Public serves the route to every caller, without authorization: it must serve
	// nothing secret (the viewer's login page).
	Public bool
}

// Handler returns the HTTP API of s. Every route it serves is described in
// docs/openapi.yaml, which it serves at GET /v1/openapi.json.
func (s *Service) Handler(opts HTTPOptions) http.Handler {
	return s.recoverPanics(s.routes(opts))
}

// apiMux is the API's ServeMux. It remembers the pattern of every route it serves
// (not the method-not-allowed and not-found answers): the API document must list each.
type apiMux struct {
	*http.ServeMux
	served []string
}

// serve registers a route.
func (m *apiMux) serve(pattern string, h http.Handler) {
	m.served = append(m.served, pattern)
	m.Handle(pattern, h)
}

// routes builds the API's routes.
func (s *Service) routes(opts HTTPOptions) *apiMux {
	if opts.MaxBody <= 0 {
		opts.MaxBody = 1 << 20
	}
	if opts.Sessions == nil {
		opts.Sessions = NewSessions(0, 0)
	}
	mux := &apiMux{ServeMux: http.NewServeMux()}
	route := func(method, path string, h http.Handler) {
		mux.serve(method+" "+path, h)
		mux.Handle(path, methodNotAllowed(method))
	}
	post := func(path string, h func(ctx context.Context, r *http.Request) (any, int, *APIError)) {
		route(http.MethodPost, path, s.endpoint(opts, h))
	}
	post("/v1/hooks/before_planning", stage(opts, s.BeforePlanning))
	post("/v1/hooks/after_planning", stage(opts, s.AfterPlanning))
	post("/v1/hooks/after_execution", stage(opts, s.AfterExecution))
	post("/v1/hooks/after_synthesis", stage(opts, s.AfterSynthesis))
	post("/v1/operations/check", func(ctx context.Context, r *http.Request) (any, int, *APIError) {
		var req OperationCheckRequest
		if e := decodeBody(r.Body, opts.MaxBody, &req); e != nil {
			return nil, 0, e
		}
		resp, e := s.CheckOperation(ctx, &req)
		if e != nil {
			return nil, 0, e
		}
		if !resp.Allowed {
			return resp, http.StatusForbidden, nil
		}
		return resp, http.StatusOK, nil
	})
	post("/v1/operations/finish", stage(opts, s.FinishOperation))
	route(http.MethodGet, "/v1/executions", s.endpoint(opts, func(ctx context.Context, r *http.Request) (any, int, *APIError) {
		q, e := parseListQuery(r.URL.Query())
		if e != nil {
			return nil, 0, e
		}
		page, e := s.Executions(ctx, q)
		return page, http.StatusOK, e
	}))
	route(http.MethodGet, "/v1/executions/{id}", s.endpoint(opts, func(ctx context.Context, r *http.Request) (any, int, *APIError) {
		rec, e := s.Execution(ctx, r.PathValue("id"))
		return rec, http.StatusOK, e
	}))
	route(http.MethodGet, "/v1/status", s.endpoint(opts, func(context.Context, *http.Request) (any, int, *APIError) {
		return s.Status(), http.StatusOK, nil
	}))
	route(http.MethodGet, "/v1/openapi.json", s.authorize(opts, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(docs.OpenAPIJSON())
	})))
	mux.serve("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}))
	mux.serve("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if g := s.cfg.Registry.Current(); g != nil {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "generation": g.ID})
			return
		}
		writeError(w, apiError(http.StatusServiceUnavailable, TypeNotReady, "no config generation is live"))
	}))
	if opts.Metrics != nil {
		mux.serve("GET /metrics", s.authorize(opts, opts.Metrics))
	}
	serveSessions(mux, opts)
	for _, m := range opts.Mounts {
		if m.Public {
			mux.serve(m.Pattern, m.Handler)
			continue
		}
		mux.serve(m.Pattern, s.authorize(opts, m.Handler))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, apiError(http.StatusNotFound, TypeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// methodNotAllowed answers a known path called with the wrong method.
func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, apiError(http.StatusMethodNotAllowed, TypeMethodNotAllowed, "%s %s: use %s", r.Method, r.URL.Path, allow))
	})
}

// stage adapts a typed stage method to an endpoint: strict body decoding in, 200 out.
func stage[Req, Resp any](opts HTTPOptions, fn func(context.Context, *Req) (*Resp, *APIError)) func(context.Context, *http.Request) (any, int, *APIError) {
	return func(ctx context.Context, r *http.Request) (any, int, *APIError) {
		var req Req
		if e := decodeBody(r.Body, opts.MaxBody, &req); e != nil {
			return nil, 0, e
		}
		resp, e := fn(ctx, &req)
		return resp, http.StatusOK, e
	}
}

// endpoint wraps a JSON handler with authorization and error rendering.
func (s *Service) endpoint(opts HTTPOptions, h func(ctx context.Context, r *http.Request) (any, int, *APIError)) http.Handler {
	return s.authorize(opts, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, status, e := h(r.Context(), r)
		if e != nil {
			writeError(w, e)
			return
		}
		writeJSON(w, status, body)
	}))
}

// authorize admits a call that presents the bearer token, or, for a GET or HEAD, the
// cookie of a live session (see Sessions). Any other call is answered 401, except a
// browser loading a page when opts.LoginPage is set: it is sent there.
func (s *Service) authorize(opts HTTPOptions, next http.Handler) http.Handler {
	if opts.Token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case bearer(opts.Token, r.Header.Get("Authorization")),
			safe(r) && opts.Sessions.valid(r):
			next.ServeHTTP(w, r)
		case safe(r) && opts.LoginPage != "" && navigation(r):
			http.Redirect(w, r, opts.LoginPage+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentd"`)
			writeError(w, apiError(http.StatusUnauthorized, TypeUnauthorized, "missing or wrong bearer token"))
		}
	})
}

// bearer reports, in constant time, whether header presents token as a bearer token.
func bearer(token, header string) bool {
	return subtle.ConstantTimeCompare([]byte(header), []byte("Bearer "+token)) == 1
}

// recoverPanics turns a panic (a hook panic re-raised by the engine) into a 500 for
// that request only; the daemon keeps serving.
func (s *Service) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.cfg.Logger.ErrorContext(r.Context(), "request panicked", slog.String("path", r.URL.Path), slog.Any("panic", v))
				writeError(w, apiError(http.StatusInternalServerError, TypeInternal, "internal error: a hook panicked"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, e *APIError) { writeJSON(w, e.Status, e) }

// StatusBody is GET /v1/status.
type StatusBody struct {
	Generation     string                             `json:"generation,omitempty"`
	LoadedAt       string                             `json:"loaded_at,omitempty"`
	Files          []string                           `json:"files"`
	Hooks          map[engine.Stage][]config.HookInfo `json:"hooks"`
	RequiredHook   string                             `json:"required_hook,omitempty"`
	Guards         []config.GuardInfo                 `json:"guards"`
	PolicyRevision string                             `json:"policy_revision,omitempty"`
	PlanBinding    engine.BindingMode                 `json:"plan_binding,omitempty"`
	MaxRequestAge  string                             `json:"max_request_age,omitempty"`
	LastReload     reload.Status                      `json:"last_reload"`
}

// Status describes the live generation and the last reload.
func (s *Service) Status() StatusBody {
	body := StatusBody{Files: []string{}, Hooks: map[engine.Stage][]config.HookInfo{}, Guards: []config.GuardInfo{}, LastReload: s.cfg.Registry.Status()}
	g := s.cfg.Registry.Current()
	if g == nil {
		return body
	}
	body.Generation, body.LoadedAt, body.Files, body.PolicyRevision = g.ID, g.LoadedAt.Format("2006-01-02T15:04:05.000Z07:00"), g.Files, g.PolicyRevision
	for _, st := range engine.Stages {
		body.Hooks[st] = append([]config.HookInfo{}, g.StageHooks(st)...)
	}
	body.RequiredHook, _ = g.Pipeline.RequiredHook()
	body.PlanBinding = g.Binding
	if g.MaxRequestAge > 0 {
		body.MaxRequestAge = g.MaxRequestAge.String()
	}
	body.Guards = append(body.Guards, g.Guards...)
	return body
}
