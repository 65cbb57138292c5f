package server

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/docs/apitest"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// The API document (docs/openapi.yaml, served at GET /v1/openapi.json) is checked
// against the live handler: the routes it documents are the routes the handler serves,
// and every answer of a scripted set of calls, one for every documented status of
// every route, matches the document's schema for that route and status.

// mountedRoutes are routes served through HTTPOptions.Mounts (gateways, the viewer).
// They are registered where the daemon is assembled, not in http.go: add each mount's
// pattern here so the route test checks that docs/openapi.yaml documents it. Their
// answers are not scripted here; the tests of the package serving them check those.
var mountedRoutes = []string{
	"POST /v1/chat/completions", "/v1/chat/completions", "GET /v1/models", "GET /v1/models/{model}", // gateway/openai
	"/mcp",                                                                        // gateway/mcp
	"GET /ui/", "GET /ui/public/", "GET /ui/settings.json", "GET /ui/graphs/{id}", // viewer
}

// isMounted reports whether a documented path is served by one of mountedRoutes.
func isMounted(path string) bool {
	return slices.ContainsFunc(mountedRoutes, func(p string) bool {
		_, mp, ok := strings.Cut(p, " ")
		if !ok {
			mp = p
		}
		return apitest.SamePath(path, mp, true)
	})
}

// TestOpenAPI_RoutesMatchHandler: every documented operation reaches a route the
// handler serves (not the not-found or method-not-allowed answers), and every route
// the handler serves is documented.
func TestOpenAPI_RoutesMatchHandler(t *testing.T) {
	doc := apitest.Load(t)
	svc, _ := newTestService(t)
	opts := HTTPOptions{Metrics: metricsStub()}
	for _, p := range mountedRoutes {
		opts.Mounts = append(opts.Mounts, Mount{Pattern: p, Handler: http.NotFoundHandler()})
	}
	mux := svc.routes(opts)
	param := regexp.MustCompile(`\{[^}]*\}`)
	for _, op := range doc.Operations() {
		method, path, _ := strings.Cut(op, " ")
		req := newRequest(method, param.ReplaceAllString(path, "x"), nil)
		if _, pattern := mux.Handler(req); !slices.Contains(mux.served, pattern) {
			t.Errorf("docs/openapi.yaml documents %s, which the handler does not serve (it matched %q): register the route in http.go, list its mount in mountedRoutes, or remove it from the document's paths", op, pattern)
		}
	}
	for _, pattern := range mux.served {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok {
			method, path = "", pattern
		}
		if !doc.Documents(method, path) {
			verb := strings.ToLower(method)
			if verb == "" {
				verb = "<each method it serves>"
			}
			t.Errorf("the handler serves %q, which docs/openapi.yaml does not document; add to its paths:\n  %s:\n    %s:\n      operationId: <name>\n      summary: <what it does>\n      requestBody: <its body schema, if any>\n      responses: {'<status>': <description and schema>, ... one for every status it answers, errors included}\nand give TestOpenAPI_ResponsesMatch a call for each of those statuses (a mounted route's own tests do that)",
				pattern, param.ReplaceAllString(path, "{name}"), verb)
		}
	}
}

func metricsStub() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprintln(w, "# HELP agentd_stage_calls_total stage calls by stage and outcome")
	})
}

// apiCall is one scripted call. bad marks a body that deliberately breaks the request
// schema; every other body must satisfy it.
type apiCall struct {
	name         string
	method, path string
	body         string
	token        string
	header       map[string]string
	bad          bool
	// slow: the body stops arriving (the read deadline passes) after body.
	slow bool
	want int
}

// faultyHook breaks on purpose: it panics in each stage on the input "panic", and its
// before_planning decision has no payload on the request "broken contract".
type faultyHook struct{}

func (faultyHook) Name() string { return "faulty" }
func (faultyHook) BeforePlanningDecision(_ context.Context, pctx *engine.PipelineContext, _ engine.Gate) (*engine.ShortCircuitDecision, error) {
	switch pctx.Request {
	case "panic":
		panic("kaboom")
	case "broken contract":
		return &engine.ShortCircuitDecision{Kind: engine.KindCache}, nil
	}
	return nil, nil
}
func (faultyHook) AfterPlanning(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
	if plan.PlanID == "panic" {
		panic("kaboom")
	}
	return plan, nil
}
func (faultyHook) AfterExecution(ctx context.Context, _ *engine.PipelineContext, r *engine.ExecutionResult) error {
	if r.PlanID == "panic" {
		panic("kaboom")
	}
	// An audit write submitted now and completed later, over POST /v1/effects.
	return engine.ReportEffect(ctx, engine.Effect{EffectID: "audit-write", Name: "audit write", Status: engine.EffectPending, StartedAt: time.Now()})
}
func (faultyHook) AfterSynthesis(_ context.Context, _ *engine.PipelineContext, response string) (string, error) {
	if response == "panic" {
		panic("kaboom")
	}
	return response, nil
}

// downRecords is a record store whose backend is unreachable.
type downRecords struct{}

func (downRecords) Put(context.Context, *engine.ExecutionRecord) error {
	return fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}
func (downRecords) Get(context.Context, string) (*engine.ExecutionRecord, error) {
	return nil, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}
func (downRecords) List(context.Context, store.Query) (store.Page, error) {
	return store.Page{}, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}

const (
	testToken         = "s3cret"
	globexToken       = "orchestrator-globex"
	viewerToken       = "viewer"
	globexViewerToken = "viewer-globex"
	approverToken     = "approver"
	testMaxBody       = 4096
)

// stalledBody is a request body whose rest stops arriving: its read deadline passes.
type stalledBody struct{ io.Reader }

func (b stalledBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF {
		return n, os.ErrDeadlineExceeded
	}
	return n, err
}

// stockHandler serves examples/stock-agent, as `agentd serve` would, with a token.
func stockHandler(t *testing.T) http.Handler {
	t.Helper()
	gen, err := config.Load(filepath.Join("..", "examples", "stock-agent"), config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	registry := reload.NewRegistry(2)
	registry.Swap(gen)
	mem := store.NewMemory(store.MemoryOptions{})
	svc, err := newService(hostConfig{Registry: registry, States: mem, Records: mem})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Handler(HTTPOptions{MaxBody: testMaxBody, Metrics: metricsStub(), Tokens: []Token{
		{SHA256: sha256.Sum256([]byte(testToken)), Role: RoleAdmin},
		{SHA256: sha256.Sum256([]byte(globexToken)), Role: RoleOrchestrator, Tenant: "globex"},
		{SHA256: sha256.Sum256([]byte(viewerToken)), Role: RoleViewer},
		{SHA256: sha256.Sum256([]byte(globexViewerToken)), Role: RoleViewer, Tenant: "globex"},
	}})
}

// approvalHandler serves a generation whose trade limit holds trades above 10000 for
// an approval (plan binding off), with an approver token besides the stock handler's,
// and returns the id of the approval a check of trade step-1 of r-held for 25000 opens.
func approvalHandler(t *testing.T) (http.Handler, string) {
	t.Helper()
	return approvalHandlerWith(t, NewBrowserSessions(0, 0))
}

// approvalHandlerWith is approvalHandler with the browser sessions it keeps.
func approvalHandlerWith(t *testing.T, sessions *BrowserSessions) (http.Handler, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hooks", "limit.yaml"), []byte(`apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: limit}
settings: {plan_binding: "off"}
guards:
  policy_revision: r1
  rules:
    - name: trade-limit
      operation: tool_call
      effect: require_approval
      deny_if: "call.capability == 'execute_trade' && double(call.parameters.amount) > 10000.0"
      code: trade_limit
      reason: trades above 10000 need approval
`), 0o644); err != nil {
		t.Fatal(err)
	}
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	registry := reload.NewRegistry(2)
	registry.Swap(gen)
	mem := store.NewMemory(store.MemoryOptions{})
	svc, err := newService(hostConfig{Registry: registry, States: mem, Records: mem})
	if err != nil {
		t.Fatal(err)
	}
	h := svc.Handler(HTTPOptions{MaxBody: testMaxBody, Sessions: sessions, Tokens: []Token{
		{SHA256: sha256.Sum256([]byte(testToken)), Role: RoleAdmin},
		{SHA256: sha256.Sum256([]byte(globexToken)), Role: RoleOrchestrator, Tenant: "globex"},
		{SHA256: sha256.Sum256([]byte(viewerToken)), Role: RoleViewer},
		{SHA256: sha256.Sum256([]byte(globexViewerToken)), Role: RoleViewer, Tenant: "globex"},
		{SHA256: sha256.Sum256([]byte(approverToken)), Role: RoleApprover, Name: "desk-lead"},
	}})
	call := op.Call{Operation: op.ToolCall, RequestID: "r-held", StepID: "step-1", Namespace: "demo-tools", AgentName: "broker",
		Capability: "execute_trade", Parameters: map[string]any{"symbol": "ACME", "amount": 25000.0}}
	res, err := svc.driver.Check(context.Background(), call)
	if err != nil || res.Approval == nil {
		t.Fatalf("check = %+v, %v; want an approval", res, err)
	}
	return h, res.Approval.ID
}

// pipelineHandler serves one generation of Go hooks on the given stores.
func pipelineHandler(t *testing.T, registry *reload.Registry, states engine.StateStore, records store.QueryableRecords) http.Handler {
	t.Helper()
	svc, err := newService(hostConfig{Registry: registry, States: states, Records: records})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Handler(HTTPOptions{})
}

func goGeneration(t *testing.T, id string, hooks ...engine.Hook) *config.Generation {
	t.Helper()
	p, err := engine.New(hooks)
	if err != nil {
		t.Fatal(err)
	}
	return &config.Generation{Generation: engine.Generation{ID: id, Pipeline: p}}
}

const (
	quotePlan = `{"plan_id":"p-quote","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote ACME","metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME"}}}]}`
	tradePlan = `{"plan_id":"p-trade","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"symbol":"ACME","amount":100}}}]}`
	result    = `{"plan_id":"p-quote","steps":[{"step_id":"step-1","agent_name":"stock-service","capability":"stock_quote","namespace":"demo-tools","parameters":{"symbol":"ACME"},"response":{"data":{"price":182.5,"currency":"USD"}},"success":true,"duration":1500000,"attempts":1}],"success":true,"total_duration":1700000,"phase_count":1}`
	quote     = `{"request_id":"r1","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"ACME"}}`
	// brokerPlan has a trade the guard allows, one above its limit and one it cannot
	// evaluate; the allow-list reviews identities only, so it accepts all three.
	brokerPlan = `{"plan_id":"p-broker","steps":[` +
		`{"step_id":"step-1","agent_name":"broker","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":500}}},` +
		`{"step_id":"step-2","agent_name":"broker","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":25000}}},` +
		`{"step_id":"step-3","agent_name":"broker","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":"lots"}}}]}`
	trade = `{"request_id":"r4","step_id":"%s","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"amount":%s}}`
)

// TestOpenAPI_ResponsesMatch runs a script of calls covering every documented status
// of every route and validates each answer against the document's schema for that
// route and status (and each well-formed request body against the request schema).
func TestOpenAPI_ResponsesMatch(t *testing.T) {
	doc := apitest.Load(t)
	stock := stockHandler(t)

	faultyRegistry := reload.NewRegistry(1)
	faultyRegistry.Swap(goGeneration(t, "g-faulty", faultyHook{}))
	mem := store.NewMemory(store.MemoryOptions{})
	faulty := pipelineHandler(t, faultyRegistry, mem, mem)
	empty := pipelineHandler(t, reload.NewRegistry(1), mem, mem)
	down := pipelineHandler(t, faultyRegistry, downRequests{}, downRecords{})
	retiredRegistry := reload.NewRegistry(1)
	retiredRegistry.Swap(goGeneration(t, "g-old"))
	retired := pipelineHandler(t, retiredRegistry, mem, mem)

	covered := map[string]bool{}
	run := func(h http.Handler, c apiCall) {
		t.Helper()
		var body io.Reader = strings.NewReader(c.body)
		if c.slow {
			body = stalledBody{body}
		}
		req := newRequest(c.method, c.path, body)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: %s %s answered %d, want %d: %s", c.name, c.method, c.path, rec.Code, c.want, rec.Body)
			return
		}
		path, query, _ := strings.Cut(c.path, "?")
		tmpl := doc.Template(path)
		if tmpl != "" {
			doc.CheckQuery(t, c.name, c.method, tmpl, query)
		}
		if tmpl == "" {
			t.Errorf("%s: %s is not a documented path", c.name, c.path)
			return
		}
		if c.body != "" && !c.bad && !c.slow {
			if s := doc.RequestSchema(t, c.method, tmpl); s != nil {
				apitest.Validate(t, c.name+": request body", s, []byte(c.body))
			}
		}
		schema, documented := doc.Response(t, c.method, tmpl, strconv.Itoa(rec.Code))
		if !documented {
			t.Errorf("%s: %s %s answered %d, which docs/openapi.yaml does not document for that route: add responses: '%d': {description, content: {application/json: {schema: ...}}} to paths.%s.%s (body: %s)",
				c.name, c.method, tmpl, rec.Code, rec.Code, tmpl, strings.ToLower(c.method), rec.Body)
			return
		}
		covered[c.method+" "+tmpl+" "+fmt.Sprint(rec.Code)] = true
		if rec.Code == http.StatusNoContent {
			return
		}
		if schema == nil {
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("%s: Content-Type %q, want text/plain", c.name, ct)
			}
			return
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want application/json", c.name, ct)
		}
		apitest.Validate(t, fmt.Sprintf("%s: %d answer of %s %s", c.name, rec.Code, c.method, tmpl), schema, rec.Body.Bytes())
	}
	post := func(name, path, body string, want int) apiCall {
		return apiCall{name: name, method: http.MethodPost, path: path, body: body, token: testToken, want: want}
	}
	get := func(name, path string, want int) apiCall {
		return apiCall{name: name, method: http.MethodGet, path: path, token: testToken, want: want}
	}
	bad := func(c apiCall) apiCall { c.bad = true; return c }
	session := func(name, body string, want int) apiCall {
		return apiCall{name: name, method: http.MethodPost, path: "/v1/session", body: body, header: map[string]string{"Content-Type": "application/json"}, want: want}
	}
	noToken := func(c apiCall) apiCall { c.token = ""; return c }
	by := func(token string, c apiCall) apiCall { c.token = token; return c }
	slow := func(c apiCall) apiCall { c.slow = true; return c }
	const (
		bp = "/v1/hooks/before_planning"
		ap = "/v1/hooks/after_planning"
		ae = "/v1/hooks/after_execution"
		as = "/v1/hooks/after_synthesis"
		oc = "/v1/operations/check"
		of = "/v1/operations/finish"
		ef = "/v1/effects"
	)
	huge := `{"request_id":"r","request":"` + strings.Repeat("x", testMaxBody) + `"}`

	// The stock example, a request from start to end, then the same question answered
	// from the cache; each route's malformed bodies and missing token.
	for _, c := range []apiCall{
		post("before_planning", bp, `{"request_id":"r1","request":"What is ACME trading at?","metadata":{"tenant":"acme"},"cache_vary":{"tenant":"acme"}}`, 200),
		post("allowed plan", ap, `{"request_id":"r1","plan":`+quotePlan+`}`, 200),
		post("re-sent plan", ap, `{"request_id":"r1","plan":`+quotePlan+`}`, 200),
		post("invalid plan", ap, `{"request_id":"r1","plan":{"plan_id":"p-bad","steps":[{"step_id":"step-2","agent_name":"nobody","namespace":"demo-tools","instruction":"x"}]}}`, 422),
		post("allowed tool call", oc, `{"operation":"tool_call","call":`+quote+`}`, 200),
		post("finish", of, `{"request_id":"r1","step_id":"step-1","status":"succeeded","response":{"data":{"price":182.5,"currency":"USD"}},"duration":1500000}`, 200),
		post("step already executed", oc, `{"operation":"tool_call","call":`+quote+`}`, 403),
		post("finish of a step never started", of, `{"request_id":"r1","step_id":"step-9","status":"failed","retryable":true}`, 409),
		bad(post("finish with an unknown status", of, `{"request_id":"r1","step_id":"step-1","status":"running"}`, 400)),
		post("broker plan", ap, `{"request_id":"r4","request":"Buy ACME","plan":`+brokerPlan+`}`, 200),
		post("guard denial", oc, `{"operation":"tool_call","call":`+fmt.Sprintf(trade, "step-2", "25000")+`}`, 403),
		post("broken guard", oc, `{"operation":"tool_call","call":`+fmt.Sprintf(trade, "step-3", `"lots"`)+`}`, 403),
		post("plan mismatch", oc, `{"operation":"tool_call","call":`+fmt.Sprintf(trade, "step-1", "900")+`}`, 403),
		post("not in the plan", oc, `{"operation":"tool_call","call":`+fmt.Sprintf(trade, "step-7", "500")+`}`, 403),
		post("bound trade", oc, `{"operation":"tool_call","call":`+fmt.Sprintf(trade, "step-1", "500")+`}`, 200),
		post("invalid call", oc, `{"operation":"tool_call","call":{"request_id":"r1"}}`, 400),
		post("after_execution", ae, `{"request_id":"r1","result":`+result+`}`, 200),
		post("after_synthesis", as, `{"request_id":"r1","response":"ACME trades at 182.50 USD; ask ops@example.com"}`, 200),
		post("cache hit", bp, `{"request_id":"r2","request":"What is ACME trading at?","metadata":{"tenant":"acme"},"cache_vary":{"tenant":"acme"}}`, 200),
		post("rejected plan", ap, `{"request_id":"r3","request":"Buy ACME","plan":`+tradePlan+`}`, 403),
		post("explained allowed plan", ap+"?explain=true", `{"request_id":"r5","request":"ACME?","plan":`+quotePlan+`}`, 200),
		post("explained rejected plan", ap+"?explain=true", `{"request_id":"r6","request":"Buy ACME","plan":`+tradePlan+`}`, 403),
		post("explain that is not a boolean", ap+"?explain=maybe", `{"request_id":"r7","request":"ACME?","plan":`+quotePlan+`}`, 400),
		post("failed request reopened", bp, `{"request_id":"r3","request":"Buy ACME"}`, 409),
		post("failed request after_planning", ap, `{"request_id":"r3","plan":`+quotePlan+`}`, 409),
		post("failed request after_execution", ae, `{"request_id":"r3","result":`+result+`}`, 409),
		post("failed request after_synthesis", as, `{"request_id":"r3","response":"Bought."}`, 409),
		post("failed request check", oc, `{"call":{"operation":"turn","request_id":"r3"}}`, 409),
		post("failed request finish", of, `{"request_id":"r3","step_id":"step-1","status":"succeeded"}`, 409),
		get("list", "/v1/executions?status=succeeded&limit=10", 200),
		get("list by violation", "/v1/executions?stage=after_planning&violation=capability_not_allowed", 200),
		get("list with a bad filter", "/v1/executions?status=done", 400),
		get("record", "/v1/executions/r1", 200),
		session("log in", `{"token":"`+testToken+`"}`, 204),
		session("log in with a wrong token", `{"token":"guess"}`, 401),
		bad(session("log in without a token", `{}`, 400)),
		bad(session("oversized log in", huge, 413)),
		bad(apiCall{name: "log in by a form", method: http.MethodPost, path: "/v1/session", body: "token=" + testToken,
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, want: 415}),
		{name: "log out", method: http.MethodDelete, path: "/v1/session", want: 204},
		get("rejected record", "/v1/executions/r3", 200),
		get("no record", "/v1/executions/nobody", 404),
		get("status", "/v1/status", 200),
		get("openapi", "/v1/openapi.json", 200),
		get("metrics", "/metrics", 200),
		{name: "healthz", method: http.MethodGet, path: "/healthz", want: 200},
		{name: "readyz", method: http.MethodGet, path: "/readyz", want: 200},

		bad(post("empty body", bp, "", 400)),
		bad(post("malformed JSON", bp, `{"request_id":`, 400)),
		bad(post("wrong type", bp, `{"request_id":"r","request":7}`, 400)),
		bad(post("unknown field", bp, `{"request_id":"r","request":"x","tenant":"acme"}`, 400)),
		bad(post("missing field", bp, `{"request_id":"r"}`, 400)),
		bad(post("missing plan", ap, `{"request_id":"r"}`, 400)),
		bad(post("missing result", ae, `{"request_id":"r"}`, 400)),
		bad(post("missing response", as, `{"request_id":"r"}`, 400)),
		bad(post("missing call", oc, `{"operation":"turn"}`, 400)),
		bad(post("missing status", of, `{"request_id":"r1","step_id":"step-1"}`, 400)),
		bad(post("oversized before_planning", bp, huge, 413)),
		bad(post("oversized after_planning", ap, huge, 413)),
		bad(post("oversized after_execution", ae, huge, 413)),
		bad(post("oversized after_synthesis", as, huge, 413)),
		bad(post("oversized check", oc, huge, 413)),
		bad(post("oversized finish", of, huge, 413)),
		noToken(post("no token before_planning", bp, `{"request_id":"r","request":"x"}`, 401)),
		noToken(post("no token after_planning", ap, `{"request_id":"r","plan":`+quotePlan+`}`, 401)),
		noToken(post("no token after_execution", ae, `{"request_id":"r","result":`+result+`}`, 401)),
		noToken(post("no token after_synthesis", as, `{"request_id":"r","response":"x"}`, 401)),
		noToken(post("no token check", oc, `{"call":{"operation":"turn","request_id":"r"}}`, 401)),
		noToken(post("no token finish", of, `{"request_id":"r","step_id":"step-1","status":"succeeded"}`, 401)),
		noToken(get("no token list", "/v1/executions", 401)),
		noToken(get("no token record", "/v1/executions/r1", 401)),
		noToken(get("no token status", "/v1/status", 401)),
		noToken(get("no token openapi", "/v1/openapi.json", 401)),
		noToken(get("no token metrics", "/metrics", 401)),
		by(viewerToken, post("viewer before_planning", bp, `{"request_id":"r","request":"x"}`, 403)),
		by(viewerToken, post("viewer after_planning", ap, `{"request_id":"r1","plan":`+quotePlan+`}`, 403)),
		by(viewerToken, post("viewer after_execution", ae, `{"request_id":"r1","result":`+result+`}`, 403)),
		by(viewerToken, post("viewer after_synthesis", as, `{"request_id":"r1","response":"x"}`, 403)),
		by(viewerToken, post("viewer check", oc, `{"call":{"operation":"turn","request_id":"r1"}}`, 403)),
		by(viewerToken, post("viewer finish", of, `{"request_id":"r1","step_id":"step-1","status":"succeeded"}`, 403)),
		by(globexToken, get("orchestrator record", "/v1/executions/r1", 403)),
		by(globexToken, get("orchestrator status", "/v1/status", 403)),
		by(globexToken, get("orchestrator openapi", "/v1/openapi.json", 403)),
		by(globexToken, get("orchestrator metrics", "/metrics", 403)),
		by(globexToken, post("other tenant opens", bp, `{"request_id":"g1","request":"x","metadata":{"tenant":"acme"}}`, 403)),
		by(globexToken, post("other tenant's after_planning", ap, `{"request_id":"r1","plan":`+quotePlan+`}`, 403)),
		by(globexToken, post("other tenant's after_execution", ae, `{"request_id":"r1","result":`+result+`}`, 403)),
		by(globexToken, post("other tenant's after_synthesis", as, `{"request_id":"r1","response":"x"}`, 403)),
		by(globexToken, post("other tenant's check", oc, `{"call":{"operation":"turn","request_id":"r1"}}`, 403)),
		by(globexToken, post("other tenant's finish", of, `{"request_id":"r1","step_id":"step-1","status":"succeeded"}`, 403)),
		by(globexViewerToken, get("other tenant's record", "/v1/executions/r1", 404)),
		by(viewerToken, get("viewer record", "/v1/executions/r1", 200)),
		slow(post("stalled before_planning", bp, `{"request_id":`, 408)),
		slow(post("stalled after_planning", ap, `{"request_id":`, 408)),
		slow(post("stalled after_execution", ae, `{"request_id":`, 408)),
		slow(post("stalled after_synthesis", as, `{"request_id":`, 408)),
		slow(post("stalled check", oc, `{"call":`, 408)),
		slow(post("stalled finish", of, `{"request_id":`, 408)),
		bad(post("oversized effect", ef, huge, 413)),
		noToken(post("no token effect", ef, `{"request_id":"r1","effect_id":"audit","status":"succeeded"}`, 401)),
		by(viewerToken, post("viewer effect", ef, `{"request_id":"r1","effect_id":"audit","status":"succeeded"}`, 403)),
		by(globexToken, post("other tenant's effect", ef, `{"request_id":"r1","effect_id":"audit","status":"succeeded"}`, 403)),
		slow(post("stalled effect", ef, `{"request_id":`, 408)),
		post("effect already terminal", ef, `{"request_id":"r1","effect_id":"audit","status":"failed","error":"late"}`, 409),
	} {
		run(stock, c)
	}

	// Hooks that panic or break the decision contract.
	for _, c := range []apiCall{
		post("before_planning panic", bp, `{"request_id":"f1","request":"panic"}`, 500),
		post("broken decision contract", bp, `{"request_id":"f2","request":"broken contract"}`, 500),
		post("after_planning panic", ap, `{"request_id":"f3","plan":{"plan_id":"panic","terminal":true}}`, 500),
		post("after_execution panic", ae, `{"request_id":"f4","result":{"plan_id":"panic","steps":[],"success":true,"total_duration":0,"phase_count":1}}`, 500),
		post("after_synthesis panic", as, `{"request_id":"f5","response":"panic"}`, 500),
		post("pending effect announced", ae, `{"request_id":"f6","result":{"plan_id":"p","steps":[],"success":true,"total_duration":0,"phase_count":0}}`, 200),
		post("effect completed", ef, `{"request_id":"f6","effect_id":"audit-write","status":"succeeded","summary":"written","data":{"rows":1},"duration":2000000}`, 200),
		post("effect completed twice", ef, `{"request_id":"f6","effect_id":"audit-write","status":"failed"}`, 409),
		post("effect never announced", ef, `{"request_id":"f6","effect_id":"nope","status":"succeeded"}`, 404),
		post("effect of no request", ef, `{"request_id":"nobody","effect_id":"audit-write","status":"succeeded"}`, 404),
		bad(post("effect with an unknown status", ef, `{"request_id":"f6","effect_id":"audit-write","status":"done"}`, 400)),
		bad(post("effect with no status", ef, `{"request_id":"f6","effect_id":"audit-write"}`, 400)),
	} {
		run(faulty, c)
	}

	// No generation is live yet.
	for _, c := range []apiCall{
		post("not ready before_planning", bp, `{"request_id":"n","request":"x"}`, 503),
		post("not ready after_planning", ap, `{"request_id":"n","plan":{"terminal":true}}`, 503),
		post("not ready after_execution", ae, `{"request_id":"n","result":{"plan_id":"p","steps":[],"success":true,"total_duration":0,"phase_count":0}}`, 503),
		post("not ready after_synthesis", as, `{"request_id":"n","response":"x"}`, 503),
		post("not ready check", oc, `{"call":{"operation":"turn","request_id":"n"}}`, 503),
		{name: "not ready readyz", method: http.MethodGet, path: "/readyz", want: 503},
		{name: "not ready status", method: http.MethodGet, path: "/v1/status", want: 200},
	} {
		run(empty, c)
	}

	// The stores are down.
	for _, c := range []apiCall{
		post("store down before_planning", bp, `{"request_id":"d","request":"x"}`, 503),
		post("store down after_planning", ap, `{"request_id":"d","plan":{"terminal":true}}`, 503),
		post("store down after_execution", ae, `{"request_id":"d","result":{"plan_id":"p","steps":[],"success":true,"total_duration":0,"phase_count":0}}`, 503),
		post("store down after_synthesis", as, `{"request_id":"d","response":"x"}`, 503),
		post("store down check", oc, `{"call":{"operation":"turn","request_id":"d"}}`, 503),
		post("store down finish", of, `{"request_id":"d","step_id":"step-1","status":"succeeded"}`, 503),
		post("store down effect", ef, `{"request_id":"d","effect_id":"audit","status":"succeeded"}`, 503),
		{name: "store down record", method: http.MethodGet, path: "/v1/executions/d", want: 503},
		{name: "store down list", method: http.MethodGet, path: "/v1/executions", want: 503},
	} {
		run(down, c)
	}

	// Approvals: a held call, listed, read and decided; the roles and tenants that may
	// not; the decision's malformed bodies.
	const heldCall = `{"operation":"tool_call","call":{"request_id":"r-held","step_id":"step-1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"symbol":"ACME","amount":25000}}}`
	held, approvalID := approvalHandler(t)
	ap1 := "/v1/approvals/" + approvalID
	for _, c := range []apiCall{
		post("held for approval", oc, heldCall, 403),
		get("approvals", "/v1/approvals?status=pending&request_id=r-held", 200),
		get("approvals with a bad status", "/v1/approvals?status=done", 400),
		noToken(get("no token approvals", "/v1/approvals", 401)),
		by(globexToken, get("orchestrator approvals", "/v1/approvals", 403)),
		by(viewerToken, get("viewer approval", ap1, 200)),
		get("unknown approval", "/v1/approvals/apr_nope_1", 404),
		by(globexViewerToken, get("other tenant's approval", ap1, 404)),
		noToken(get("no token approval", ap1, 401)),
		by(globexToken, get("orchestrator approval", ap1, 403)),
		by(viewerToken, post("viewer decides", ap1, `{"decision":"approve"}`, 403)),
		noToken(post("no token decides", ap1, `{"decision":"approve"}`, 401)),
		bad(by(approverToken, post("undecidable decision", ap1, `{"decision":"maybe"}`, 400))),
		by(approverToken, post("unknown approval decided", "/v1/approvals/apr_0123456789abcdef0123456789abcdef_1", `{"decision":"approve"}`, 404)),
		bad(by(approverToken, post("oversized decision", ap1, huge, 413))),
		slow(by(approverToken, post("stalled decision", ap1, `{"decision":`, 408))),
		by(approverToken, post("approved", ap1, `{"decision":"approve","comment":"checked with the desk"}`, 200)),
		by(approverToken, post("approved again", ap1, `{"decision":"approve"}`, 200)),
		by(approverToken, post("rejected after approval", ap1, `{"decision":"reject"}`, 409)),
		post("approved call", oc, heldCall, 200),
		post("approved call again", oc, heldCall, 403),
	} {
		run(held, c)
	}
	for _, c := range []apiCall{
		{name: "store down approvals", method: http.MethodGet, path: "/v1/approvals", want: 503},
		{name: "store down approval", method: http.MethodGet, path: ap1, want: 503},
		{name: "store down decision", method: http.MethodPost, path: ap1, body: `{"decision":"approve"}`, want: 503},
	} {
		run(down, c)
	}

	// A request whose generation was retired by two reloads.
	run(retired, apiCall{name: "open on g-old", method: http.MethodPost, path: bp, body: `{"request_id":"old","request":"x"}`, want: 200})
	retiredRegistry.Swap(goGeneration(t, "g-new"))
	for _, c := range []apiCall{
		post("retired after_planning", ap, `{"request_id":"old","plan":{"terminal":true}}`, 409),
		post("retired after_execution", ae, `{"request_id":"old","result":{"plan_id":"p","steps":[],"success":true,"total_duration":0,"phase_count":0}}`, 409),
		post("retired after_synthesis", as, `{"request_id":"old","response":"x"}`, 409),
	} {
		c.token = ""
		run(retired, c)
	}

	for _, op := range doc.Operations() {
		method, tmpl, _ := strings.Cut(op, " ")
		if isMounted(tmpl) {
			continue
		}
		for _, status := range doc.Statuses(method, tmpl) {
			if !covered[op+" "+status] {
				t.Errorf("docs/openapi.yaml documents %s for %s, but no call of TestOpenAPI_ResponsesMatch produced it: add one to the script (or remove the status if the route cannot answer it)", status, op)
			}
		}
	}

	// Answers of no route: a known path with another method, and an unknown path.
	for _, c := range []struct {
		method, path, ref string
		want              int
	}{
		{http.MethodGet, bp, "#/components/responses/MethodNotAllowed", 405},
		{http.MethodDelete, "/v1/executions/r1", "#/components/responses/MethodNotAllowed", 405},
		{http.MethodGet, "/v1/nothing-here", "#/components/responses/RouteNotFound", 404},
	} {
		rec := httptest.NewRecorder()
		req := newRequest(c.method, c.path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		stock.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s %s answered %d, want %d", c.method, c.path, rec.Code, c.want)
			continue
		}
		apitest.Validate(t, c.method+" "+c.path, doc.Schema(t, c.ref+"/content/application~1json/schema"), rec.Body.Bytes())
		if c.want == 405 && rec.Header().Get("Allow") == "" {
			t.Errorf("%s %s: 405 without an Allow header", c.method, c.path)
		}
	}
}
