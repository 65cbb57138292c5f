package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/internal/capture"
)

// harness is a gateway over a real config directory: the repository's plan policy
// (policies/agentd/plan) as the required hook, an allow-list in data/, the servers
// given, and the gateway served over streamable HTTP.
type harness struct {
	t       testing.TB
	dir     string
	reg     *reload.Registry
	mem     *store.Memory
	gw      *Gateway
	url     string
	callLog string
	logs    *capture.Buffer
	options config.Options // what configure loads the config with
}

// allowed is the allow-list of every harness: namespace -> agent -> capabilities.
var allowed = map[string]map[string][]string{
	"test": {
		"local": {"echo", "add", "slow", "crash", "garble", "noise", "env", "pid", "grow", "extra", "Wipe"},
		"other": {"echo", "add", "pid"},
		"web":   {"echo", "add"},
	},
	"demo-mcp": {
		"everything": {"echo", "get-sum", "get-structured-content", "trigger-long-running-operation"},
	},
}

// hookSet is the plan hook, the guards and the gateway section with servers (YAML list
// items, indented as under `servers:`). A generous rego_timeout keeps a loaded machine
// (or -race) from turning reviews into evaluation timeouts.
func hookSet(servers string) string {
	return `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: gateway-test}
settings: {rego_timeout: 10s}
hooks:
  - name: allowed-operations
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.agentd.plan}
guards:
  policy_revision: test-v1
  rules:
    - name: no-forbidden-echo
      operation: tool_call
      deny_if: "call.capability == 'echo' && has(call.parameters.message) && call.parameters.message == 'forbidden'"
      code: forbidden_message
      reason: the message is forbidden
    - name: sums-above-a-million
      operation: tool_call
      effect: require_approval
      deny_if: "call.capability == 'add' && has(call.parameters.a) && type(call.parameters.a) in [int, double] && double(call.parameters.a) > 1000000.0"
      code: large_sum
      reason: sums above one million need approval
gateways:
  mcp:
    servers:
` + servers
}

// stdioServer is the YAML of a stdio server entry running the test upstream, logging
// its calls to the harness's call log.
func stdioServer(name, extra string) string {
	exe, _ := os.Executable()
	return `      - name: ` + name + `
        namespace: test
        command: [` + jsonString(exe) + `, "-test.run=^$"]
        env: {` + envUpstream + `: ` + name + `, ` + envCallLog + `: "@CALLLOG@", MARKER: explicit}
        tools: [{name: echo}, {name: add}, {name: wipe}, {name: slow}, {name: crash}, {name: garble}, {name: noise}, {name: env}, {name: pid}, {name: grow}, {name: extra}]
        resources: ["test://doc/public", "test://dyn/*"]
        prompts: [greet]
` + extra
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func newHarness(t testing.TB, servers string) *harness {
	t.Helper()
	return newHarnessWith(t, servers, nil)
}

// newHarnessWith is newHarness with the gateway's Config changed by configure first.
func newHarnessWith(t testing.TB, servers string, configure func(*Config)) *harness {
	t.Helper()
	dir := t.TempDir()
	policies, err := filepath.Abs("../../policies")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(policies, filepath.Join(dir, "policies")); err != nil {
		t.Fatal(err)
	}
	allow, _ := json.Marshal(map[string]any{"allowlist": allowed})
	writeFile(t, filepath.Join(dir, "data/agentd/allowlist.json"), string(allow))
	h := &harness{t: t, dir: dir, reg: reload.NewRegistry(4), mem: store.NewMemory(store.MemoryOptions{}),
		callLog: filepath.Join(t.TempDir(), "calls.log"), logs: &capture.Buffer{}}
	h.configure(servers)
	driver, err := engine.NewDriver(engine.DriverConfig{Generations: h.reg, States: h.mem, Records: h.mem})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := Config{Driver: driver, Generations: h.reg, Logger: logger, Version: "test",
		Backoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	if configure != nil {
		configure(&cfg)
	}
	h.gw, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		h.gw.Run(ctx)
		close(done)
	}()
	srv := httptest.NewServer(h.gw.Handler())
	h.url = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		<-done
		if t.Failed() {
			t.Logf("gateway log:\n%s", h.logs.String())
		}
	})
	return h
}

// configure writes servers as the gateway section and makes that generation live.
func (h *harness) configure(servers string) {
	h.t.Helper()
	servers = strings.ReplaceAll(servers, `"@CALLLOG@"`, jsonString(h.callLog))
	writeFile(h.t, filepath.Join(h.dir, "hooks/gateway.yaml"), hookSet(servers))
	gen, err := config.Load(h.dir, h.options)
	if err != nil {
		h.t.Fatalf("config: %v", err)
	}
	h.reg.Swap(gen)
}

// waitReady waits until every upstream named is ready.
func (h *harness) waitReady(names ...string) {
	h.t.Helper()
	h.waitFor("upstreams "+strings.Join(names, ", ")+" ready", func(st Status) bool {
		ready := 0
		for _, s := range st.Servers {
			for _, n := range names {
				if s.Name == n && s.State == stateReady {
					ready++
				}
			}
		}
		return ready == len(names)
	})
}

func (h *harness) waitFor(what string, ok func(Status) bool) Status {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := h.gw.Status(context.Background())
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; status %+v", what, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// upstreamCalls returns the calls that reached the stdio upstreams, in order.
func (h *harness) upstreamCalls() []string {
	data, err := os.ReadFile(h.callLog)
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// waitUpstreamSaw waits until the call log has line.
func (h *harness) waitUpstreamSaw(line string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(h.upstreamCalls(), line) {
		if time.Now().After(deadline) {
			h.t.Fatalf("the upstream never logged %q; calls %v", line, h.upstreamCalls())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// client is an MCP client (the official Go SDK) of the harness over streamable HTTP.
type client struct {
	*mcp.ClientSession
	header       atomic.Value // string: the X-Agentd-Request-Id of the session's responses
	toolsChanged chan struct{}
	progress     chan *mcp.ProgressNotificationParams
}

func (h *harness) connect() *client {
	h.t.Helper()
	return h.connectWith(nil, nil)
}

// connectWith is connect with the client's options changed by configure first, and
// the session's options opts.
func (h *harness) connectWith(configure func(*mcp.ClientOptions), opts *mcp.ClientSessionOptions) *client {
	h.t.Helper()
	c := &client{toolsChanged: make(chan struct{}, 16), progress: make(chan *mcp.ProgressNotificationParams, 64)}
	httpClient := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil {
			if id := resp.Header.Get(RequestIDHeader); id != "" {
				c.header.Store(id)
			}
		}
		return resp, err
	})}
	options := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.toolsChanged <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { c.progress <- req.Params },
	}
	if configure != nil {
		configure(options)
	}
	sdk := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, options)
	cs, err := sdk.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url, HTTPClient: httpClient}, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = cs.Close() })
	c.ClientSession = cs
	return c
}

// requestID is the agentd request id the gateway named in its response headers.
func (c *client) requestID() string {
	id, _ := c.header.Load().(string)
	return id
}

// tools returns the names the client is offered, in order.
func (c *client) tools(t *testing.T) []string {
	t.Helper()
	var names []string
	for tool, err := range c.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// call calls a tool and fails the test on a protocol error.
func (c *client) call(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// text is the text content of a result.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// refusalCode is the code of a refused call's _meta, "" when it was not refused.
func refusalCode(res *mcp.CallToolResult) string {
	r, _ := res.Meta[metaRefusal].(map[string]any)
	code, _ := r["code"].(string)
	return code
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// callParams are the params of a call with a progress token.
func callParams(name string, args map[string]any, token string) *mcp.CallToolParams {
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	p.SetProgressToken(token)
	return p
}

// waitRecord waits until the record of request id has a combined result whose number
// of steps satisfies ok (a call's result is reported after its answer is sent).
func (h *harness) waitRecord(id string, ok func(steps int) bool) *engine.ExecutionRecord {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := h.mem.Get(context.Background(), id)
		if err == nil && rec.Result != nil && ok(len(rec.Result.Steps)) {
			return rec
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for the record of %s (%v)", id, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// httpServer is the YAML of a streamable-HTTP server entry.
func httpServer(name, url, extra string) string {
	return `      - name: ` + name + `
        namespace: test
        url: ` + url + `
        tools: [{name: echo}, {name: add}]
` + extra
}

// httpUpstream is the test upstream served in-process over streamable HTTP on a fixed
// loopback address, so it can be stopped and started again. With a non-empty token it
// answers 401 to a request without "Authorization: Bearer <token>".
type httpUpstream struct {
	t     testing.TB
	name  string
	token string
	addr  string
	mu    sync.Mutex
	srv   *http.Server
}

func newHTTPUpstream(t testing.TB, name, token string) *httpUpstream {
	u := &httpUpstream{t: t, name: name, token: token}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = ln.Addr().String()
	u.serve(ln)
	t.Cleanup(u.stop)
	return u
}

func (u *httpUpstream) url() string { return "http://" + u.addr + "/mcp" }

func (u *httpUpstream) serve(ln net.Listener) {
	server := newTestUpstream(u.name, "")
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.token != "" && r.Header.Get("Authorization") != "Bearer "+u.token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})}
	u.mu.Lock()
	u.srv = srv
	u.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

func (u *httpUpstream) stop() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.srv != nil {
		_ = u.srv.Close()
		u.srv = nil
	}
}

func (u *httpUpstream) start() {
	ln, err := net.Listen("tcp", u.addr)
	if err != nil {
		u.t.Fatal(err)
	}
	u.serve(ln)
}
