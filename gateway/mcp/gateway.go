package mcp

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// Generations is where the gateway finds its configuration: the live generation and a
// signal when the next one goes live (reload.Registry).
type Generations interface {
	Current() *config.Generation
	Swapped() <-chan struct{}
}

// Config configures a Gateway. Driver and Generations are required.
type Config struct {
	Driver      *engine.Driver
	Generations Generations
	Logger      *slog.Logger
	// Version is the gateway's version in its MCP implementation info.
	Version string
	// SessionTimeout closes an HTTP session nobody has called for that long; 0 means
	// DefaultSessionIdle.
	SessionTimeout time.Duration
	// MaxSessions bounds the HTTP sessions open at once, MaxSessionsPerCaller those of
	// one caller; 0 means DefaultMaxSessions and DefaultMaxSessionsPerCaller. A session
	// past either is refused 429 too_many_sessions (see Handler).
	MaxSessions, MaxSessionsPerCaller int
	// MaxBody bounds the body of one HTTP request to /mcp; 0 means the MCP SDK's
	// default (4 MiB). A larger one is answered 413.
	MaxBody int64
	// Caller names the caller of an HTTP request (the daemon: a digest of the token
	// it presented), whose sessions only it may use and which count against its
	// MaxSessionsPerCaller. nil, or "", is one anonymous caller.
	Caller func(context.Context) string
	// LogPayloads logs the text of an upstream's stderr lines and malformed messages;
	// without it, only their length and a digest (--log-payloads).
	LogPayloads bool
	// DisableLocalhostProtection turns the transport's own Host check off, for a
	// server in front that checks Host headers itself (the daemon's, which also takes
	// --allowed-hosts).
	DisableLocalhostProtection bool
	// Backoff is the delay before an upstream's first reconnect, doubled per further
	// failure up to MaxBackoff; 0 means 250ms and 30s.
	Backoff, MaxBackoff time.Duration
	// TracerProvider traces the MCP messages the gateway serves and sends, after the
	// MCP semantic conventions (see telemetry.go); nil traces nothing.
	TracerProvider trace.TracerProvider
	// ApprovalsPage is where a human decides approvals (the daemon: the viewer's
	// approvals page, "/ui/#/approvals"): an absolute URL, or a path resolved against
	// the origin of the HTTP request that opened the session. A held call of a client
	// that declared URL-mode elicitation asks it to open that page (see elicit). ""
	// (or a path, for a stdio session) elicits nothing.
	ApprovalsPage string
}

// Gateway is the MCP gateway. Run follows the live generation and keeps the upstreams
// connected; Handler and Serve serve MCP sessions. It is safe for concurrent use.
type Gateway struct {
	cfg    Config
	log    *slog.Logger
	server *mcp.Server
	tracer trace.Tracer // nil when not tracing

	// mu serializes changes to the upstreams and to what the server offers.
	mu        sync.Mutex
	upstreams []*upstream // in configuration order
	offered   offered

	tools    atomic.Pointer[map[string]toolRoute] // listed tool name -> route
	sessions sync.Map                             // *mcp.ServerSession -> *session
	owners   *owners                              // who opened each HTTP session, and how many are open
	progress progressRoutes
	inflight atomic.Int64 // tools/call being served
	applied  atomic.Bool  // set once Run applied a generation
}

// New returns a gateway with no upstreams; Run connects them.
func New(cfg Config) (*Gateway, error) {
	if cfg.Driver == nil || cfg.Generations == nil {
		return nil, errors.New("mcpgw: a gateway needs a Driver and Generations")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionIdle
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxSessionsPerCaller <= 0 {
		cfg.MaxSessionsPerCaller = DefaultMaxSessionsPerCaller
	}
	if cfg.Caller == nil {
		cfg.Caller = func(context.Context) string { return "" }
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 250 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.Backoff {
		cfg.MaxBackoff = max(30*time.Second, cfg.Backoff)
	}
	g := &Gateway{cfg: cfg, log: cfg.Logger.With("gateway", "mcp"), progress: progressRoutes{routes: map[string]progressRoute{}},
		owners: newOwners(cfg.MaxSessions, cfg.MaxSessionsPerCaller), tracer: engine.Tracer(cfg.TracerProvider, "github.com/agentd-dev/agentd/gateway/mcp")}
	g.tools.Store(&map[string]toolRoute{})
	g.server = mcp.NewServer(&mcp.Implementation{Name: "agentd", Title: "agentd MCP gateway", Version: cfg.Version}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		},
		GetSessionID: newSessionID,
		// A session is known from its handshake on, so it is forgotten when it ends.
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) { g.sessionOf(req.Session, nil) },
	})
	if g.tracer != nil {
		g.server.AddReceivingMiddleware(g.traceServer) // outermost: the span covers the review
	}
	g.server.AddReceivingMiddleware(g.review)
	return g, nil
}

// Run follows the live generation until ctx is done: it starts, restarts and stops
// upstreams as each generation's gateways.mcp section says, and then stops them all.
func (g *Gateway) Run(ctx context.Context) {
	for {
		swapped := g.cfg.Generations.Swapped()
		g.apply(ctx, g.cfg.Generations.Current())
		select {
		case <-ctx.Done():
			g.apply(ctx, nil)
			return
		case <-swapped:
		}
	}
}

// apply makes the upstreams those of gen (none for nil or a generation without the
// gateway): an unchanged server keeps its connection and takes the new settings, a
// server whose transport changed is restarted, a removed one is stopped. Then every
// session is told that the tool list may have changed, since the review may have.
func (g *Gateway) apply(ctx context.Context, gen *config.Generation) {
	var servers []config.MCPServer
	if gen != nil && gen.Gateways.MCP != nil {
		servers = gen.Gateways.MCP.Servers
	}
	g.mu.Lock()
	old := make(map[string]*upstream, len(g.upstreams))
	for _, u := range g.upstreams {
		old[u.name] = u
	}
	var next, stopped []*upstream
	for i := range servers {
		s := &servers[i]
		u, ok := old[s.Name]
		delete(old, s.Name)
		if ok && u.settings().Transport(s) {
			u.conf.Store(newSettings(s))
			next = append(next, u)
			continue
		}
		if ok {
			stopped = append(stopped, u)
			g.log.Info("MCP upstream changed; restarting it", "server", s.Name)
		}
		next = append(next, g.startUpstream(ctx, s))
	}
	for _, u := range old {
		stopped = append(stopped, u)
		g.log.Info("MCP upstream removed from the config; stopping it", "server", u.name)
	}
	g.upstreams = next
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, u := range stopped {
		wg.Go(u.stop)
	}
	wg.Wait()
	g.refresh(true)
	g.applied.Store(gen != nil)
}
