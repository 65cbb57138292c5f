package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/internal/redirect"
)

const (
	// connectTimeout bounds starting an upstream: the handshake and the first listing.
	connectTimeout = 30 * time.Second
	// maxRedirects bounds the redirects, within its origin, an HTTP upstream may send
	// one request through.
	maxRedirects = 5
	// healthyAfter is how long a connection must last for the next failure to count as
	// the first again (backoff restarts from Config.Backoff).
	healthyAfter = 30 * time.Second
	// maxListed bounds the tools, resources, templates and prompts kept of one upstream.
	maxListed = 10_000
)

// Upstream states, as Status reports them.
const (
	stateStarting   = "starting"
	stateReady      = "ready"
	stateRestarting = "restarting"
	stateStopped    = "stopped"
)

// upstream is one upstream MCP server, kept connected by run until stop. Its transport
// settings are fixed for its life (a change is a new upstream); the rest of its
// settings follow the live generation through conf.
type upstream struct {
	g      *Gateway
	name   string
	conf   atomic.Pointer[settings]
	client *mcp.Client
	// transportAttrs are the network attributes of its client spans (traceClient).
	transportAttrs []attribute.KeyValue
	cancel         context.CancelFunc
	done           chan struct{}

	mu       sync.Mutex
	session  *mcp.ClientSession // nil while not connected
	broken   chan struct{}      // closed when a call found the connection broken
	state    string
	lastErr  string
	restarts int
	since    time.Time
	features features
}

// features is what an upstream offers, as last listed.
type features struct {
	tools     []*mcp.Tool
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
}

// startUpstream starts keeping the server s connected.
func (g *Gateway) startUpstream(ctx context.Context, s *config.MCPServer) *upstream {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	u := &upstream{g: g, name: s.Name, cancel: cancel, done: make(chan struct{}), state: stateStarting, since: time.Now()}
	u.conf.Store(newSettings(s))
	u.client = mcp.NewClient(&mcp.Implementation{Name: "agentd", Version: g.cfg.Version}, &mcp.ClientOptions{
		Capabilities:               &mcp.ClientCapabilities{},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { go u.relist(ctx) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { go u.relist(ctx) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { go u.relist(ctx) },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			g.progress.forward(req.Params)
		},
	})
	if g.tracer != nil {
		u.transportAttrs = transportAttributes(len(s.Command) > 0, s.URL)
		u.client.AddSendingMiddleware(u.traceClient)
	}
	go u.run(ctx)
	return u
}

// settings returns the upstream's current settings.
func (u *upstream) settings() *settings { return u.conf.Load() }

// stop disconnects the upstream for good and returns once it is down.
func (u *upstream) stop() {
	u.cancel()
	<-u.done
}

// run connects the upstream, and reconnects it after every failure with exponential
// backoff, until ctx is done.
func (u *upstream) run(ctx context.Context) {
	defer close(u.done)
	failures := 0
	for {
		started := time.Now()
		err := u.serve(ctx)
		if ctx.Err() != nil {
			u.setState(stateStopped, nil)
			return
		}
		if time.Since(started) >= healthyAfter {
			failures = 0
		}
		failures++
		delay := min(u.g.cfg.Backoff<<min(failures-1, 20), u.g.cfg.MaxBackoff)
		u.setState(stateRestarting, err)
		u.g.log.Warn("MCP upstream down; reconnecting", "server", u.name, "error", err.Error(), "retry_in", delay.String())
		select {
		case <-ctx.Done():
			u.setState(stateStopped, nil)
			return
		case <-time.After(delay):
		}
		u.mu.Lock()
		u.restarts++
		u.mu.Unlock()
	}
}

// serve connects once, lists what the upstream offers and then waits for the
// connection to end: the process exits, the peer closes it, a call finds it broken or
// ctx is done. It returns why it ended.
func (u *upstream) serve(ctx context.Context) error {
	transport, exited, cleanup, err := u.transport(u.settings().MCPServer)
	if err != nil {
		return err
	}
	defer cleanup()
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	cs, err := u.client.Connect(cctx, transport, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	f, err := list(cctx, cs)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	broken := make(chan struct{})
	u.mu.Lock()
	u.session, u.broken, u.features = cs, broken, f
	u.state, u.lastErr, u.since = stateReady, "", time.Now()
	u.mu.Unlock()
	u.g.log.Info("MCP upstream ready", "server", u.name, "tools", len(f.tools), "resources", len(f.resources), "prompts", len(f.prompts))
	u.g.refresh(false)
	defer func() {
		u.mu.Lock()
		u.session = nil
		u.mu.Unlock()
	}()
	waited := make(chan error, 1)
	go func() { waited <- cs.Wait() }()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-exited:
		return errors.New("the server process exited")
	case <-broken:
		return errors.New("a call found the connection broken")
	case err := <-waited:
		if err == nil {
			err = errors.New("the server closed the connection")
		}
		return err
	}
}

// transport returns how to reach server s: a spawned process (exited closes when it
// ends) or its URL (exited never closes). cleanup stops the process.
func (u *upstream) transport(s *config.MCPServer) (t mcp.Transport, exited <-chan struct{}, cleanup func(), err error) {
	if len(s.Command) > 0 {
		p, err := spawn(s, lineLog{logger: u.g.log, payloads: u.g.cfg.LogPayloads})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("start %s: %w", s.Command[0], err)
		}
		var t mcp.Transport = &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}
		if u.g.tracer != nil {
			t = taggingTransport{t}
		}
		return t, p.exited, p.stop, nil
	}
	headers := http.Header{}
	for name, env := range s.HeadersEnv {
		v, ok := os.LookupEnv(env)
		if !ok {
			return nil, nil, nil, fmt.Errorf("header %s: environment variable %s is not set", name, env)
		}
		headers.Set(name, v)
	}
	endpoint, err := url.Parse(s.URL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("url %q: %w", s.URL, err)
	}
	// withHeaders adds the secret headers to every request, a redirected one too: so
	// redirects are followed within the server's origin only.
	var base http.RoundTripper = http.DefaultTransport
	if u.g.tracer != nil {
		base = tagRequests{base: base}
	}
	client := &http.Client{Transport: withHeaders{base: base, headers: headers},
		CheckRedirect: redirect.SameOrigin(endpoint, maxRedirects)}
	return &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: client}, nil, func() {}, nil
}

// withHeaders adds fixed headers to every request.
type withHeaders struct {
	base    http.RoundTripper
	headers http.Header
}

func (t withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// list lists everything cs's server offers, by the capabilities it declared.
func list(ctx context.Context, cs *mcp.ClientSession) (features, error) {
	var f features
	caps := &mcp.ServerCapabilities{}
	if init := cs.InitializeResult(); init != nil && init.Capabilities != nil {
		caps = init.Capabilities
	}
	var err error
	if caps.Tools != nil {
		if f.tools, err = collect(cs.Tools(ctx, nil)); err != nil {
			return f, fmt.Errorf("tools/list: %w", err)
		}
	}
	if caps.Resources != nil {
		if f.resources, err = collect(cs.Resources(ctx, nil)); err != nil {
			return f, fmt.Errorf("resources/list: %w", err)
		}
		if f.templates, err = collect(cs.ResourceTemplates(ctx, nil)); err != nil {
			return f, fmt.Errorf("resources/templates/list: %w", err)
		}
	}
	if caps.Prompts != nil {
		if f.prompts, err = collect(cs.Prompts(ctx, nil)); err != nil {
			return f, fmt.Errorf("prompts/list: %w", err)
		}
	}
	return f, nil
}

// collect gathers the items of a paginated listing, at most maxListed.
func collect[T any](seq func(yield func(T, error) bool)) ([]T, error) {
	var out []T
	for item, err := range seq {
		if err != nil {
			return nil, err
		}
		if len(out) == maxListed {
			break
		}
		out = append(out, item)
	}
	return out, nil
}

// relist lists what the upstream offers again, after its list-changed notification.
func (u *upstream) relist(ctx context.Context) {
	cs := u.current()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	f, err := list(ctx, cs)
	if err != nil {
		u.g.log.Warn("MCP upstream list changed, but listing it failed", "server", u.name, "error", err.Error())
		return
	}
	u.mu.Lock()
	u.features = f
	u.mu.Unlock()
	u.g.refresh(false)
}

// current returns the live client session, nil while not connected.
func (u *upstream) current() *mcp.ClientSession {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.session
}

// offers returns what the upstream last listed.
func (u *upstream) offers() features {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.features
}

func (u *upstream) setState(state string, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.state, u.since = state, time.Now()
	if err != nil {
		u.lastErr = err.Error()
	}
}

// errUnavailable is the error of a call while the upstream is not connected.
type errUnavailable struct {
	server, cause string
}

func (e *errUnavailable) Error() string {
	if e.cause == "" {
		return fmt.Sprintf("MCP server %q is not connected", e.server)
	}
	return fmt.Sprintf("MCP server %q is not connected: %s", e.server, e.cause)
}

// codeRejectedByTransport is the JSON-RPC error code the SDK gives a message its
// transport could not send: the connection, not the upstream, failed.
const codeRejectedByTransport = -32005

// callTool calls tool on the upstream. An error that is neither the upstream's answer
// (a JSON-RPC error response) nor the caller's context marks the connection broken,
// so run reconnects.
func (u *upstream) callTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	u.mu.Lock()
	cs, broken, lastErr := u.session, u.broken, u.lastErr
	u.mu.Unlock()
	if cs == nil {
		return nil, &errUnavailable{server: u.name, cause: lastErr}
	}
	res, err := cs.CallTool(ctx, params)
	var wire *jsonrpc.Error
	if err != nil && ctx.Err() == nil && (!errors.As(err, &wire) || wire.Code == codeRejectedByTransport) {
		u.markBroken(broken)
	}
	return res, err
}

func (u *upstream) markBroken(broken chan struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.broken == broken {
		select {
		case <-broken:
		default:
			close(broken)
		}
	}
}
