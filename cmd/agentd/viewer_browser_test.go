package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium returns the path of a Chromium (or Chrome) binary, or skips the test where
// there is none; under CI=true it fails instead, since .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium on PATH (CI=true: the browser tests must run; .ci/run installs the chromium package)")
	}
	t.Skip("no Chromium on PATH (apt-get install chromium): skipping the records viewer's browser tests")
	return ""
}

// artifacts returns the directory for the test's screenshots: $AGENTD_TEST_ARTIFACTS
// or a fresh one under the temporary directory, kept after the test and printed.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AGENTD_TEST_ARTIFACTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "agentd-viewer-screenshots-"); err != nil {
			t.Fatal(err)
		}
	}
	dir = filepath.Join(dir, t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// browse starts a headless Chromium with a fresh profile (and the extra options
// given) and returns a context for chromedp actions on one tab, bounded by timeout.
func browse(t *testing.T, timeout time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-extensions", true), chromedp.WindowSize(1400, 1000),
	}
	opts = append(opts, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	return tab
}

// browserRun runs chromedp actions, failing the test with what it was doing, the
// page's text and a screenshot (failure.png in shots).
func browserRun(t *testing.T, ctx context.Context, shots, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		_ = chromedp.Do(ctx, screenshot(shots, "failure"))
		t.Fatalf("browser: %s: %v\n--- the page says ---\n%s", what, err, text)
	}
}

// screenshot saves the whole page as name.png in dir.
func screenshot(dir, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tab *chromedp.Target) error {
		png, err := chromedp.FullScreenshot(100)(ctx, tab)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	})
}

// truthy waits until the JavaScript expression is true.
func truthy(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))
}

// runJS runs JavaScript for its effect.
func runJS(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](js + "; undefined")
}

// hash moves the viewer to another of its pages.
func hash(h string) chromedp.Action[chromedp.Void] {
	return runJS(fmt.Sprintf("location.hash = %q", h))
}

// check fails the test unless the JavaScript expression is true.
func check(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil || !ok {
		t.Errorf("in the browser, %s: %s is not true (%v)", what, expr, err)
	}
}

// waitStatus waits until GET /v1/status holds want.
func waitStatus(t *testing.T, d *daemon, auth []string, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, status := d.do(t, "GET", "/v1/status", "", auth...)
		if strings.Contains(status, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /v1/status never held %s: %s", want, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The hooks guide's verification recipe in a real browser: with the stock
// walkthrough's requests in the store, log in, filter to the rejected trade, open it,
// read the allowed-operations card and the plan graph, follow the trace link; a
// request text full of markup shows as text and runs nothing; the config page shows
// the live generation and the last reload error.
func TestViewer_InBrowser(t *testing.T) {
	tab := browse(t, 3*time.Minute)
	shots := artifacts(t)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	dir := copyExample(t, "stock-agent")
	const token = "viewer-test-token"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemonEnv(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"},
		dir, "--token-file", tokenFile, "--debounce", "20ms",
		"--trace-url", "http://jaeger.example:16686/trace/{trace_id}?uiFind={span_id}&op={span_name}")
	auth := []string{"Authorization", "Bearer " + token}

	walk := exec.Command("bash", filepath.Join(repoRoot(t), "examples", "stock-agent", "walkthrough.sh"))
	walk.Env = append(walk.Environ(), "AGENTD="+d.url, "AGENTD_TOKEN="+token)
	if out, err := walk.CombinedOutput(); err != nil {
		t.Fatalf("walkthrough: %v\n%s", err, out)
	}
	const probe = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`
	for _, c := range []struct{ path, body string }{
		{"/v1/hooks/before_planning", fmt.Sprintf(`{"request_id":"xss-probe","request":%q,"metadata":{"tenant":"<b onmouseover=alert(1)>acme</b>"}}`, probe)},
		{"/v1/hooks/before_planning", `{"request_id":"graph-1","request":"Quote ACME, then a peer above it","metadata":{"tenant":"acme"}}`},
		{"/v1/hooks/after_planning", `{"request_id":"graph-1","plan":{"plan_id":"pg","steps":[` +
			`{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote ACME","metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME"}}},` +
			`{"step_id":"step-2","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote a peer","depends_on":["step-1"],"metadata":{"capability":"stock_quote","parameters":{"symbol":"PEER","above":"{{step-1.response.data.price}}"}}},` +
			`{"step_id":"step-3","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote in the same currency","depends_on":["step-1","step-2"],"metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME","currency":"{{step-2.response.data.currency}}"}}}]}}`},
	} {
		if code, body := d.do(t, "POST", c.path, c.body, auth...); code != http.StatusOK {
			t.Fatalf("POST %s = %d %s", c.path, code, body)
		}
	}
	code, body := d.do(t, "GET", "/v1/executions?status=failed&id=trade-", "", auth...)
	var page struct {
		Records []struct {
			RequestID string `json:"request_id"`
		}
	}
	if err := json.Unmarshal([]byte(body), &page); code != http.StatusOK || err != nil || len(page.Records) != 1 {
		t.Fatalf("the walkthrough's failed trade: GET /v1/executions = %d %s", code, body)
	}
	trade := page.Records[0].RequestID

	// No session: the viewer sends the browser to its login page.
	browserRun(t, tab, shots, "open the viewer without a session",
		chromedp.Navigate(d.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")), screenshot(shots, "01-login"))
	check(t, tab, "the login page is where an unauthenticated browser lands", `location.pathname === "/ui/public/login.html"`)
	browserRun(t, tab, shots, "log in with a wrong token",
		chromedp.SendKeys(chromedp.CSS("#token"), "wrong"), chromedp.Click(chromedp.CSS(`#login button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS("#error")))
	browserRun(t, tab, shots, "log in",
		chromedp.SetValue(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS(`#login button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS("#records")), screenshot(shots, "02-list"))
	check(t, tab, "the session cookie is not readable by scripts", `!document.cookie.includes("agentd_session")`)
	check(t, tab, "the list shows the walkthrough's requests", fmt.Sprintf(`!!document.querySelector('tr[data-request-id=%q]')`, trade))

	// Filter to the rejected trade.
	browserRun(t, tab, shots, "filter to failed requests with the allow-list's violation",
		chromedp.SetValue(chromedp.CSS("#filter-status"), "failed"),
		chromedp.SendKeys(chromedp.CSS("#filter-violation"), "capability_not_allowed"),
		chromedp.Click(chromedp.CSS(`#filters button[type=submit]`)),
		truthy(fmt.Sprintf(`location.hash.includes("violation=capability_not_allowed") && document.querySelectorAll('#records tbody tr').length === 1 && !!document.querySelector('tr[data-request-id=%q]')`, trade)),
		screenshot(shots, "03-list-filtered"))
	browserRun(t, tab, shots, "open the rejected trade",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-request-id=%q] a`, trade))),
		chromedp.WaitVisible(chromedp.CSS("#request-id")),
		truthy(`!!document.querySelector('svg.plan-graph')`), screenshot(shots, "04-trade-pre-execution"))
	card := `document.querySelector('article.invocation[data-hook="allowed-operations"]')`
	check(t, tab, "the allowed-operations card shows the stored decision",
		card+`.querySelector('.decision').textContent === "fail_closed / terminate / hook_error"`)
	check(t, tab, "the card shows the invocation failed", card+`.classList.contains("failed")`)
	check(t, tab, "the card shows fields it does not name, such as the decision id", card+`.textContent.includes("decision id")`)
	check(t, tab, "the card shows the violation", card+`.querySelector('.violation[data-code="capability_not_allowed"]').textContent.includes("step-1")`)
	check(t, tab, "the card links to the hook's span",
		`/^http:\/\/jaeger\.example:16686\/trace\/[0-9a-f]{32}\?uiFind=[0-9a-f]{16}&op=pipeline\.hook\.after_planning\.allowed-operations$/.test(`+card+`.querySelector('a.trace').href)`)
	check(t, tab, "the trace link opens apart from the viewer", card+`.querySelector('a.trace').rel === "noopener noreferrer"`)
	check(t, tab, "the rejected candidate is drawn, marked rejected, its step violated",
		`(() => { const g = document.querySelector('svg.plan-graph[data-rejected="true"]'); const n = g && g.querySelector('g.node[data-step="step-1"]');
		  return !!n && n.classList.contains("violated") && n.textContent.includes("demo-tools/stock-service") && n.textContent.includes("execute_trade") &&
		    g.querySelectorAll('g.node').length === 1 && g.querySelectorAll('g.edge').length === 0 })()`)
	check(t, tab, "an invocation without a recorded decision would say so; the tenant hook's decision is recorded",
		`document.querySelector('article.invocation[data-hook="tenant-context"] .decision').textContent === "fail_open / continue / no_decision"`)

	// The graph of a three-step plan: its nodes and its depends_on and reference edges.
	browserRun(t, tab, shots, "open the three-step plan",
		hash("#/r/graph-1"), truthy(`document.getElementById("request-id")?.textContent === "graph-1"`),
		truthy(`!!document.querySelector('svg.plan-graph')`), screenshot(shots, "05-graph"))
	check(t, tab, "the accepted plan has three nodes, in dependency columns",
		`(() => { const g = document.querySelector('svg.plan-graph[data-rejected="false"]');
		  const x = s => g.querySelector('g.node[data-step="' + s + '"]').transform.baseVal[0].matrix.e;
		  return g.querySelectorAll('g.node').length === 3 && x("step-1") < x("step-2") && x("step-2") < x("step-3") })()`)
	check(t, tab, "the accepted plan has its three edges, of the right kinds",
		`(() => { const g = document.querySelector('svg.plan-graph[data-rejected="false"]');
		  const e = (a, b) => g.querySelector('g.edge[data-from="' + a + '"][data-to="' + b + '"]');
		  return g.querySelectorAll('g.edge').length === 3 &&
		    e("step-1", "step-2").classList.contains("depends-on") && e("step-1", "step-2").classList.contains("reference") &&
		    e("step-1", "step-2").textContent.includes("response.data.price") &&
		    e("step-1", "step-3").classList.contains("depends-on") && !e("step-1", "step-3").classList.contains("reference") &&
		    e("step-2", "step-3").textContent.includes("response.data.currency") })()`)

	// The XSS probe: markup in the request and in an enrichment shows as text, and
	// nothing runs.
	browserRun(t, tab, shots, "open the probe",
		hash("#/r/xss-probe"), truthy(`document.getElementById("request-id")?.textContent === "xss-probe"`),
		screenshot(shots, "06-xss-probe"))
	check(t, tab, "the request's markup shows as text", fmt.Sprintf(`document.getElementById("request-text").textContent === %q`, probe))
	check(t, tab, "the enrichment's markup shows as text", `document.querySelector('[data-effect="planning_enrichment:rag_context"] pre').textContent.includes("<b onmouseover=alert(1)>acme</b>")`)
	check(t, tab, "no element came from the data", `document.querySelectorAll("main script, main img, main b").length === 0`)
	check(t, tab, "no script of the data ran", `window.pwned === undefined`)
	browserRun(t, tab, shots, "try an inline script against the policy",
		runJS(`window.cspViolations = []; document.addEventListener("securitypolicyviolation", e => window.cspViolations.push(e.violatedDirective));
		  const s = document.createElement("script"); s.textContent = "window.inlineRan = true"; document.body.append(s)`),
		truthy(`window.cspViolations.length > 0`))
	check(t, tab, "the Content-Security-Policy stops inline scripts", `window.inlineRan === undefined && window.cspViolations.some(d => d.startsWith("script-src"))`)
	browserRun(t, tab, shots, "back to the list", hash("#/?id=xss"), truthy(`!!document.querySelector('tr[data-request-id="xss-probe"]')`))
	check(t, tab, "the list shows the probe's text as text", fmt.Sprintf(`document.querySelector('tr[data-request-id="xss-probe"] .request-text').textContent === %q && window.pwned === undefined`, probe))

	// An effect completed later (POST /v1/effects) shows how it went.
	ledger := "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: ledger}\nhooks:\n  - name: ledger-write\n    stage: after_execution\n" +
		"    steps:\n      - effect: {id: ledger, name: ledger write, status: pending, summary: \"'queued'\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "hooks", "40-ledger.yaml"), []byte(ledger), 0o644); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, d, auth, `"name":"ledger-write"`)
	for _, c := range []struct{ path, body string }{
		{"/v1/hooks/before_planning", `{"request_id":"ledger-1","request":"Quote ACME","metadata":{"tenant":"acme"}}`},
		{"/v1/hooks/after_execution", `{"request_id":"ledger-1","result":{"plan_id":"p","success":true,"steps":[]}}`},
		{"/v1/effects", `{"request_id":"ledger-1","effect_id":"ledger","status":"succeeded","summary":"written"}`},
	} {
		if code, body := d.do(t, "POST", c.path, c.body, auth...); code != http.StatusOK {
			t.Fatalf("POST %s = %d %s", c.path, code, body)
		}
	}
	browserRun(t, tab, shots, "open the ledger request's Post-Execution",
		hash("#/r/ledger-1"), truthy(`document.getElementById("request-id")?.textContent === "ledger-1"`),
		chromedp.Click(chromedp.CSS(`button[data-tab="Post-Execution"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-effect="ledger"]`)),
		screenshot(shots, "07-effect-history"))
	check(t, tab, "one card shows the effect succeeded after it was pending",
		`document.querySelectorAll('[data-effect="ledger"]').length === 1 &&
		 [...document.querySelectorAll('[data-effect="ledger"] .history li .badge')].map(b => b.textContent).join() === "pending,succeeded"`)

	// The config page: the live generation, its hooks, and the last reload error.
	broken := filepath.Join(dir, "hooks", "99-broken.yaml")
	if err := os.WriteFile(broken, []byte("apiVersion: agentd.dev/v1\nkind: HookSet\nhooks:\n  - name: broken\n    stage: nowhere\n    steps: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, d, auth, `"result":"error"`)
	browserRun(t, tab, shots, "open the config page",
		chromedp.Click(chromedp.CSS("#nav-config")), chromedp.WaitVisible(chromedp.CSS("#hooks")), screenshot(shots, "08-config"))
	check(t, tab, "the config page shows the live generation", `/^g-[0-9a-f]{16}$/.test(document.getElementById("generation").textContent)`)
	check(t, tab, "the hooks are listed in run order", `[...document.querySelectorAll("#hooks tbody tr")].map(r => r.dataset.hook).join() ===
		"response-cache,tenant-context,allowed-operations,execution-audit,ledger-write,pii-redaction,response-cache-store"`)
	check(t, tab, "the memo keys of the rego step are shown", `document.querySelector('#hooks tr[data-hook="allowed-operations"] .note').textContent.includes("memoized on")`)
	check(t, tab, "the last reload error names file:line:col", `/hooks\/99-broken\.yaml:5:\d+/.test(document.getElementById("reload-error").textContent)`)

	// Logging out ends the session: the viewer asks for the token again.
	browserRun(t, tab, shots, "log out",
		chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.Navigate(d.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
}
