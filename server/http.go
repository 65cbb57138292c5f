package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"sync"

	"github.com/agentd-dev/agentd/api"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/docs"
	"github.com/agentd-dev/agentd/engine"
)

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Tokens are the accepted bearer tokens; with none, every route is open to
	// everyone (as admin, bound to no tenant).
	Tokens []Token
	// MaxBody bounds request bodies; 0 means 1 MiB.
	MaxBody int64
	// Timeouts bound how long one call holds its connection.
	Timeouts Timeouts
	// Metrics serves /metrics; nil answers 404.
	Metrics http.Handler
	// Mounts are further routes served beside the API (the gateways, the viewer),
	// behind the same authorization, deadlines and panic recovery.
	Mounts []Mount
	// Gateways report their state in GET /v1/status, under gateways.<name>, as the
	// caller may see it (a caller confined to a tenant: engine.TenantFrom(ctx)).
	Gateways map[string]func(context.Context) any
	// Sessions are the browser sessions that stand for a token on GET and HEAD calls
	// (see BrowserSessions); nil means a store of this handler's own.
	Sessions *BrowserSessions
	// AllowedHosts are the Host names, besides the loopback ones, that a call reaching
	// the server at a loopback address may name (see browserBoundary).
	AllowedHosts []string
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
	// Role is the role a token needs to call the route; "" means RoleAdmin.
	Role Role
	// Stream marks a route that streams its response (server-sent events): its write
	// timeout applies to each write rather than to the whole response.
	Stream bool
	// Public serves the route to every caller, without authorization: it must serve
	// nothing secret (the viewer's login page).
	Public bool
}

// Handler returns the HTTP API of s. Every route it serves is described in
// docs/openapi.yaml, which it serves at GET /v1/openapi.json, and names here the role
// a token needs to call it (see Role); /healthz and /readyz need none. Every route is
// behind the browser boundary (browserBoundary): Host, Origin and Content-Type checks.
// A call's traceparent header is its spans' parent (withTraceContext).
func (s *Service) Handler(opts HTTPOptions) http.Handler {
	return withDeadlines(opts.Timeouts, s.recoverPanics(browserBoundary(opts.AllowedHosts, withTraceContext(s.routes(opts)))))
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
		opts.Sessions = NewBrowserSessions(0, 0)
	}
	mux := &apiMux{ServeMux: http.NewServeMux()}
	route := func(role Role, method, path string, h http.Handler) {
		mux.serve(method+" "+path, authorize(opts, role, h))
		mux.Handle(path, methodNotAllowed(method))
	}
	post := func(role Role, path string, h func(ctx context.Context, r *http.Request) (any, int, *api.Error)) {
		route(role, http.MethodPost, path, endpoint(h))
	}
	post(RoleOrchestrator, "/v1/hooks/before_planning", stage(opts, s.BeforePlanning))
	post(RoleOrchestrator, "/v1/hooks/after_planning", func(ctx context.Context, r *http.Request) (any, int, *api.Error) {
		explain, e := queryBool(r, "explain")
		if e != nil {
			return nil, 0, e
		}
		return stage(opts, func(ctx context.Context, req *api.AfterPlanningRequest) (*api.AfterPlanningResponse, *api.Error) {
			req.Explain = explain
			return s.AfterPlanning(ctx, req)
		})(ctx, r)
	})
	post(RoleOrchestrator, "/v1/hooks/after_execution", stage(opts, s.AfterExecution))
	post(RoleOrchestrator, "/v1/hooks/after_synthesis", stage(opts, s.AfterSynthesis))
	post(RoleOrchestrator, "/v1/operations/check", func(ctx context.Context, r *http.Request) (any, int, *api.Error) {
		ctx = engine.WithDecisionID(ctx, engine.NewDecisionID())
		var req api.OperationCheckRequest
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
	post(RoleOrchestrator, "/v1/operations/finish", stage(opts, s.FinishOperation))
	s.approvalRoutes(mux, opts)
	post(RoleOrchestrator, "/v1/effects", stage(opts, s.UpdateEffect))
	route(RoleViewer, http.MethodGet, "/v1/executions", endpoint(func(ctx context.Context, r *http.Request) (any, int, *api.Error) {
		q, e := parseListQuery(r.URL.Query())
		if e != nil {
			return nil, 0, e
		}
		page, e := s.Executions(ctx, q)
		return page, http.StatusOK, e
	}))
	route(RoleViewer, http.MethodGet, "/v1/executions/{id}", endpoint(func(ctx context.Context, r *http.Request) (any, int, *api.Error) {
		rec, e := s.Execution(ctx, r.PathValue("id"))
		return rec, http.StatusOK, e
	}))
	route(RoleViewer, http.MethodGet, "/v1/status", endpoint(func(ctx context.Context, _ *http.Request) (any, int, *api.Error) {
		body := s.Status(ctx)
		for name, status := range opts.Gateways {
			if body.Gateways == nil {
				body.Gateways = map[string]any{}
			}
			body.Gateways[name] = status(ctx)
		}
		return body, http.StatusOK, nil
	}))
	route(RoleViewer, http.MethodGet, "/v1/openapi.json", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(docs.OpenAPIJSON())
	}))
	mux.serve("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}))
	mux.serve("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if g := s.cfg.Registry.Current(); g != nil {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "generation": g.ID})
			return
		}
		writeError(w, api.Errorf(http.StatusServiceUnavailable, api.TypeNotReady, "no config generation is live"))
	}))
	if opts.Metrics != nil {
		mux.serve("GET /metrics", authorize(opts, RoleViewer, opts.Metrics))
	}
	serveSessions(mux, opts)
	for _, m := range opts.Mounts {
		if m.Public {
			mux.serve(m.Pattern, m.Handler)
			continue
		}
		role, h := m.Role, m.Handler
		if role == "" {
			role = RoleAdmin
		}
		if m.Stream {
			h = streaming(opts.Timeouts, h)
		}
		mux.serve(m.Pattern, authorize(opts, role, h))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, api.Errorf(http.StatusNotFound, api.TypeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// methodNotAllowed answers a known path called with the wrong method.
func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, api.Errorf(http.StatusMethodNotAllowed, api.TypeMethodNotAllowed, "%s %s: use %s", r.Method, r.URL.Path, allow))
	})
}

// stage adapts a typed stage method to an endpoint: strict body decoding in, 200 out.
// The call's decision id is made here, so that every answer of the driver's can name it.
func stage[Req, Resp any](opts HTTPOptions, fn func(context.Context, *Req) (*Resp, *api.Error)) func(context.Context, *http.Request) (any, int, *api.Error) {
	return func(ctx context.Context, r *http.Request) (any, int, *api.Error) {
		ctx = engine.WithDecisionID(ctx, engine.NewDecisionID())
		var req Req
		if e := decodeBody(r.Body, opts.MaxBody, &req); e != nil {
			return nil, 0, e
		}
		resp, e := fn(ctx, &req)
		return resp, http.StatusOK, e
	}
}

// queryBool reads a boolean query parameter: absent is false; true, false, 1 and 0 are
// accepted, anything else is a 400.
func queryBool(r *http.Request, name string) (bool, *api.Error) {
	if r.URL.RawQuery == "" {
		return false, nil // without parsing an empty query into a map
	}
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, api.Errorf(http.StatusBadRequest, api.TypeInvalidField, "query parameter %s must be true or false, not %q", name, v).With("field", name)
	}
	return b, nil
}

// endpoint renders a JSON handler's answer or error.
func endpoint(h func(ctx context.Context, r *http.Request) (any, int, *api.Error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, status, e := h(r.Context(), r)
		if e != nil {
			writeError(w, e)
			return
		}
		writeJSON(w, status, body)
	})
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
				s.cfg.Logger.ErrorContext(r.Context(), "request panicked", slog.String("path", r.URL.Path), slog.String("panic", s.panicText(v)))
				writeError(w, api.Errorf(http.StatusInternalServerError, api.TypeInternal, "internal error: a hook panicked"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// panicText tells a panic's value for the log: a Go runtime error as it is, any other
// value (which may quote request data) by its type only, unless payloads are logged.
func (s *Service) panicText(v any) string {
	if _, ok := v.(runtime.Error); ok || s.cfg.LogPayloads {
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("a %T (its value is logged with --log-payloads)", v)
}

// fastResponse is a response body with a reflection-free encoding
// (api.AfterPlanningResponse): AppendJSON appends what writeJSON's
// encoding/json.Encoder writes for it (without the newline), or reports false to
// leave the body to that Encoder.
type fastResponse interface {
	AppendJSON(dst []byte) ([]byte, bool)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	if f, ok := v.(fastResponse); ok && writeFast(w, status, f) {
		return
	}
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeFast writes f's reflection-free encoding, or reports false, having written
// nothing, when f leaves itself to the Encoder.
func writeFast(w http.ResponseWriter, status int, f fastResponse) bool {
	buf := responseBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledResponse {
			responseBuffers.Put(buf)
		}
	}()
	out, ok := f.AppendJSON((*buf)[:0])
	*buf = out
	if !ok {
		return false
	}
	*buf = append(out, '\n')
	w.WriteHeader(status)
	_, _ = w.Write(*buf)
	return true
}

// responseBuffers hold the encodings of fast responses, up to maxPooledResponse bytes
// (a rare large one is left to the collector).
var responseBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledResponse = 64 << 10

func writeError(w http.ResponseWriter, e *api.Error) { writeJSON(w, e.Status, e) }

// Status describes the live generation and the last reload.
func (s *Service) Status(ctx context.Context) api.StatusBody {
	body := api.StatusBody{Files: []string{}, DataMounts: []config.DataMount{}, Hooks: map[engine.Stage][]config.HookInfo{}, Guards: []config.GuardInfo{}, LastReload: s.cfg.Registry.Status(), Store: s.cfg.Store}
	if s.cfg.Shadow != nil {
		body.Shadow = s.cfg.Shadow(ctx)
	}
	if s.cfg.Bundles != nil {
		body.Bundles = s.cfg.Bundles()
	}
	g := s.cfg.Registry.Current()
	if g == nil {
		return body
	}
	body.Generation, body.LoadedAt, body.Files, body.PolicyRevision = g.ID, g.LoadedAt.Format("2006-01-02T15:04:05.000Z07:00"), g.Files, g.PolicyRevision
	body.DataMounts = append(body.DataMounts, g.DataMounts...)
	for _, st := range engine.Stages {
		body.Hooks[st] = append([]config.HookInfo{}, g.StageHooks(st)...)
	}
	body.RequiredHook, _ = g.Pipeline.RequiredHook()
	body.Observers = g.Observers
	body.PlanBinding = g.Binding
	if g.MaxRequestAge > 0 {
		body.MaxRequestAge = g.MaxRequestAge.String()
	}
	body.Guards = append(body.Guards, g.Guards...)
	return body
}
