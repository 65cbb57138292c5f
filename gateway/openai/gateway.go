package openai

import (
	"cmp"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"go.opentelemetry.io/otel/trace"
)

// Config configures a Gateway. Registry and Driver are required.
type Config struct {
	// Registry holds the live generation, whose gateways.openai the gateway reads on
	// every call, and the generations requests are pinned to.
	Registry *reload.Registry
	// Driver runs the stages and checks; the daemon's, so that records, metrics and
	// decision logs are the API's.
	Driver *engine.Driver
	Logger *slog.Logger
	// MaxBody bounds request bodies; 0 means 1 MiB.
	MaxBody int64
	// TracerProvider gets each upstream call's chat span; nil traces nothing.
	TracerProvider trace.TracerProvider
}

// Gateway serves the OpenAI chat-completions API over the request driver. It is safe
// for concurrent use.
type Gateway struct {
	reg     *reload.Registry
	driver  *engine.Driver
	logger  *slog.Logger
	maxBody int64
	up      *upstream
	mux     *http.ServeMux
	tracer  trace.Tracer // nil: no spans
}

// New returns a gateway.
func New(cfg Config) *Gateway {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	g := &Gateway{reg: cfg.Registry, driver: cfg.Driver, logger: cfg.Logger, maxBody: cfg.MaxBody, up: newUpstream(), mux: http.NewServeMux(), tracer: tracerOf(cfg.TracerProvider)}
	for _, p := range Patterns {
		g.mux.HandleFunc(p, g.route(p))
	}
	return g
}

// Patterns are the ServeMux patterns the gateway serves: POST /v1/chat/completions
// (any other method is answered 405), and GET /v1/models and /v1/models/{model}
// passed through to the upstream. A host mounts the Gateway under each of them (or
// under a prefix that covers them); the gateway authorizes nothing itself.
var Patterns = []string{"POST /v1/chat/completions", "/v1/chat/completions", "GET /v1/models", "GET /v1/models/{model}"}

// route returns the handler of one of Patterns.
func (g *Gateway) route(pattern string) http.HandlerFunc {
	switch pattern {
	case "POST /v1/chat/completions":
		return g.chat
	case "/v1/chat/completions":
		return methodNotAllowed
	default:
		return g.models
	}
}

// ServeHTTP serves the routes of Patterns; any other path is answered 404 in the
// OpenAI error shape.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := g.mux.Handler(r); pattern == "" {
		writeError(w, newError(http.StatusNotFound, typeNotFound, "unknown_route", "no route %s %s", r.Method, r.URL.Path))
		return
	}
	g.mux.ServeHTTP(w, r)
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	writeError(w, newError(http.StatusMethodNotAllowed, typeInvalidRequest, "method_not_allowed", "%s %s: use POST", r.Method, r.URL.Path))
}

// live returns the live generation and its gateways.openai, or the error to answer.
func (g *Gateway) live() (*config.Generation, *config.OpenAIGateway, *apiError) {
	gen := g.reg.Current()
	if gen == nil {
		return nil, nil, driverError(&engine.RefusalError{Code: engine.RefusedNotReady})
	}
	if gen.Gateways.OpenAI == nil {
		return nil, nil, newError(http.StatusNotFound, typeNotFound, codeNotConfigured, "the OpenAI gateway is not configured (gateways.openai in a HookSet document)")
	}
	return gen, gen.Gateways.OpenAI, nil
}

// chat serves POST /v1/chat/completions.
func (g *Gateway) chat(w http.ResponseWriter, r *http.Request) {
	gen, cfg, e := g.live()
	if e != nil {
		writeError(w, e)
		return
	}
	body, e := readBody(r.Body, r.ContentLength, g.maxBody)
	if e != nil {
		writeError(w, e)
		return
	}
	req, e := parseRequest(body)
	if e != nil {
		writeError(w, e)
		return
	}
	conv, e := analyze(req.messages)
	if e != nil {
		writeError(w, e)
		return
	}
	tenant, confined := engine.TenantFrom(r.Context())
	if !confined {
		tenant = engine.TenantOf(req.metadata)
	}
	id, token, e := requestID(cfg, r.Header, req, conv, tenant)
	if e != nil {
		writeError(w, e)
		return
	}
	c := &chatCall{g: g, w: w, req: req, conv: conv, id: id, token: token, tenant: tenant, idHeader: cfg.RequestIDHeader, gen: gen, cfg: cfg}
	if e := c.serve(r.Context()); e != nil && e != errClientGone {
		g.logger.WarnContext(r.Context(), "openai gateway call failed", "request_id", c.id, "status", e.Status, "code", e.Code, "error", e.Message)
		writeError(w, e)
	}
}

// models serves GET /v1/models and /v1/models/{model} from the upstream: its answer
// when that is JSON (the key scrubbed from it), else a 502. The gateway answers JSON
// only, never an upstream's page from agentd's origin.
func (g *Gateway) models(w http.ResponseWriter, r *http.Request) {
	_, cfg, e := g.live()
	if e != nil {
		writeError(w, e)
		return
	}
	path := "/models"
	if m := r.PathValue("model"); m != "" {
		path += "/" + url.PathEscape(m)
	}
	x, e := g.up.call(r.Context(), cfg, http.MethodGet, path, nil, false)
	if e != nil {
		if e != errClientGone {
			writeError(w, e)
		}
		return
	}
	defer x.close()
	data, e := x.readAll()
	if e != nil {
		writeError(w, e)
		return
	}
	body, ok := x.scrubJSON(data)
	if !ok || !isJSON(x.resp.Header.Get("Content-Type")) {
		writeError(w, malformed("the models list is not JSON (%s)", cmp.Or(x.resp.Header.Get("Content-Type"), "no content type")))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(x.resp.StatusCode)
	_, _ = w.Write(body)
}
