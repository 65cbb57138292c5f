package openai

import (
	"log/slog"
	"net/http"
	"net/url"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentd-dev/agentd/cmd/agentd/internal/server"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
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
	return &Gateway{reg: cfg.Registry, driver: cfg.Driver, logger: cfg.Logger, maxBody: cfg.MaxBody, up: newUpstream(), tracer: tracerOf(cfg.TracerProvider)}
}

// Mounts returns the gateway's routes, to be served beside the API (and behind its
// authorization): POST /v1/chat/completions, and GET /v1/models and
// /v1/models/{model} passed through to the upstream.
func (g *Gateway) Mounts() []server.Mount {
	return []server.Mount{
		{Pattern: "POST /v1/chat/completions", Handler: http.HandlerFunc(g.chat), Role: server.RoleOrchestrator, Stream: true},
		{Pattern: "/v1/chat/completions", Handler: http.HandlerFunc(methodNotAllowed), Role: server.RoleOrchestrator},
		{Pattern: "GET /v1/models", Handler: http.HandlerFunc(g.models), Role: server.RoleOrchestrator},
		{Pattern: "GET /v1/models/{model}", Handler: http.HandlerFunc(g.models), Role: server.RoleOrchestrator},
	}
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	writeError(w, newError(http.StatusMethodNotAllowed, typeInvalidRequest, "method_not_allowed", "%s %s: use POST", r.Method, r.URL.Path))
}

// live returns the live generation and its gateways.openai, or the error to answer.
func (g *Gateway) live() (*config.Generation, *config.OpenAIGateway, *apiError) {
	gen := g.reg.Current()
	if gen == nil {
		return nil, nil, newError(http.StatusServiceUnavailable, typeServer, string(engine.RefusedNotReady), "no config generation is live")
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
	body, e := readBody(r.Body, g.maxBody)
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
	id, derived, e := requestID(cfg, r.Header, req, conv)
	if e != nil {
		writeError(w, e)
		return
	}
	c := &chatCall{g: g, w: w, req: req, conv: conv, id: id, derived: derived, idHeader: cfg.RequestIDHeader, gen: gen, cfg: cfg}
	if e := c.serve(r.Context()); e != nil && e != errClientGone {
		g.logger.WarnContext(r.Context(), "openai gateway call failed", "request_id", c.id, "status", e.Status, "code", e.Code, "error", e.Message)
		writeError(w, e)
	}
}

// models serves GET /v1/models and /v1/models/{model} from the upstream.
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
	ct := x.resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(x.resp.StatusCode)
	_, _ = w.Write(x.scrub(data))
}
