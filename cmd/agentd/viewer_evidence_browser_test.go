package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// evidenceRules add, to the stock example, a plan rule in audit and in warn mode that
// would deny every quote of ACME, a guard in warn mode that would deny quoting it at
// call time, and an enforcing guard that denies quoting PEER.
const evidenceRules = `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: evidence}
hooks:
  - name: acme-freeze
    stage: after_planning
    steps:
      - rego: {query: data.rollout.freeze, mode: audit}
      - rego: {query: data.rollout.freeze, mode: warn}
guards:
  policy_revision: trade-limits-v2
  rules:
    - name: acme-quotes
      operation: tool_call
      mode: warn
      deny_if: "call.capability == 'stock_quote' && call.parameters.symbol == 'ACME'"
      code: acme_frozen
      reason: ACME is frozen
    - name: peer-quotes
      operation: tool_call
      deny_if: "call.capability == 'stock_quote' && call.parameters.symbol == 'PEER'"
      code: peer_blocked
      reason: peers are not quoted
`

// The evidence of a request in a real browser: what audit and warn rules would have
// denied shows on the hook's card and on the check's row, a guard's denial on the
// first tab and on its step in the plan graph; a request whose only step was denied
// is listed failed (guard_denied), not open; the list has a tenant column and a
// tenant filter, and a session of a tenant-bound token sees its tenant's records
// only, whatever it filters on.
func TestViewer_EvidenceInBrowser(t *testing.T) {
	tab := browse(t, 3*time.Minute)
	shots := artifacts(t)
	dir := copyExample(t, "stock-agent")
	writeFile(t, dir, "hooks/15-evidence.yaml", evidenceRules)
	writeFile(t, dir, "policies/rollout/freeze.rego", freezePolicy)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(tokens, []byte("- {token: evidence-admin, role: admin}\n- {token: globex-viewer, role: viewer, tenant: globex}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, "--token-file", tokens)
	auth := []string{"Authorization", "Bearer evidence-admin"}
	const plan = `{"plan_id":"pe","steps":[` +
		`{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote ACME","metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME"}}},` +
		`{"step_id":"step-2","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote PEER","metadata":{"capability":"stock_quote","parameters":{"symbol":"PEER"}}}]}`
	for _, c := range []struct {
		path, body string
		status     int
		allowed    string
	}{
		{"/v1/hooks/before_planning", `{"request_id":"ev-acme","request":"Quote ACME and PEER","metadata":{"tenant":"acme"}}`, 200, ""},
		{"/v1/hooks/after_planning", `{"request_id":"ev-acme","plan":` + plan + `}`, 200, ""},
		{"/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"ev-acme","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"ACME"}}}`, 200, `"allowed":true`},
		{"/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"ev-acme","step_id":"step-2","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"PEER"}}}`, 403, `"code":"peer_blocked"`},
		{"/v1/hooks/before_planning", `{"request_id":"ev-peer","request":"Quote PEER","metadata":{"tenant":"acme"}}`, 200, ""},
		{"/v1/hooks/after_planning", `{"request_id":"ev-peer","plan":{"plan_id":"pp","steps":[` +
			`{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote PEER","metadata":{"capability":"stock_quote","parameters":{"symbol":"PEER"}}}]}}`, 200, ""},
		{"/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"ev-peer","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"PEER"}}}`, 403, `"code":"peer_blocked"`},
		{"/v1/hooks/before_planning", `{"request_id":"ev-globex","request":"Quote GLBX","metadata":{"tenant":"globex"}}`, 200, ""},
	} {
		code, body := d.do(t, "POST", c.path, c.body, auth...)
		if code != c.status || !strings.Contains(body, c.allowed) {
			t.Fatalf("POST %s = %d %s, want %d with %s", c.path, code, body, c.status, c.allowed)
		}
	}

	login := func(token string) {
		browserRun(t, tab, shots, "log in as "+token,
			chromedp.Navigate(d.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SetValue(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS(`#login button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS("#records")))
	}
	login("evidence-admin")
	rows := `[...document.querySelectorAll('#records tbody tr')].map(r => r.dataset.requestId).sort().join()`
	check(t, tab, "the list has a tenant column", `[...document.querySelectorAll('#records thead th')].some(h => h.textContent === "Tenant")`)
	check(t, tab, "each row shows its tenant", `document.querySelector('tr[data-request-id="ev-acme"] td.tenant').textContent === "acme" &&
		document.querySelector('tr[data-request-id="ev-globex"] td.tenant').textContent === "globex"`)
	check(t, tab, "a request whose only step a guard denied is over, failed with cause guard_denied; one with a step left stays open",
		`(() => { const r = id => document.querySelector('tr[data-request-id="' + id + '"]');
		  return r("ev-peer").textContent.includes("guard_denied") && r("ev-peer").querySelectorAll('.badge.failed').length === 2 &&
		    r("ev-acme").querySelector('.badge.open') !== null })()`)
	browserRun(t, tab, shots, "filter on a tenant",
		chromedp.SendKeys(chromedp.CSS("#filter-tenant"), "globex"), chromedp.Click(chromedp.CSS(`#filters button[type=submit]`)),
		truthy(`location.hash.includes("tenant=globex") && `+rows+` === "ev-globex"`), screenshot(shots, "01-tenant-filter"))

	browserRun(t, tab, shots, "open the request with the denied step",
		hash("#/r/ev-acme"), truthy(`document.getElementById("request-id")?.textContent === "ev-acme"`),
		truthy(`!!document.querySelector('svg.plan-graph[data-rejected="false"]')`), screenshot(shots, "02-pre-execution"))
	check(t, tab, "the first tab is shown and holds the guard's denial, with its step, code and reason",
		`(() => { const c = document.querySelector('#guard-denials article.denial[data-step="step-2"]');
		  return !!c && c.closest('[role=tabpanel]').hidden === false && c.dataset.code === "peer_blocked" && c.dataset.outcome === "deny" &&
		    c.textContent.includes("peers are not quoted") &&
		    document.querySelectorAll('#guard-denials article').length === 1 })()`)
	check(t, tab, "the graph marks the denied step with its code, and only it",
		`(() => { const g = document.querySelector('svg.plan-graph[data-rejected="false"]');
		  const n = s => g.querySelector('g.node[data-step="' + s + '"]');
		  return n("step-2").classList.contains("denied") && n("step-2").querySelector('text.denial').textContent.includes("peer_blocked") &&
		    !n("step-1").classList.contains("denied") && !n("step-1").querySelector('text.denial') })()`)
	card := `document.querySelector('article.invocation[data-hook="acme-freeze"]')`
	check(t, tab, "the hook's card shows what its audit step would have denied",
		card+`.querySelector('.finding.audit[data-mode="audit"] .violation[data-code="acme_frozen"]').textContent.includes("step-1")`)
	check(t, tab, "the hook's card shows its warn step's warning",
		card+`.querySelector('.finding.warn .violation[data-code="acme_frozen"]') !== null && [...`+card+`.querySelectorAll('h4')].map(h => h.textContent).join().includes("Warnings,Would deny (audit)")`)

	browserRun(t, tab, shots, "open Post-Execution",
		chromedp.Click(chromedp.CSS(`button[data-tab="Post-Execution"]`)), chromedp.WaitVisible(chromedp.CSS("#operations")),
		screenshot(shots, "03-post-execution"))
	check(t, tab, "the allowed check's row shows the warn guard's warning",
		`(() => { const r = document.querySelector('#operations tbody tr[data-outcome="allow"]');
		  const f = r && r.querySelector('.finding.warn[data-code="acme_frozen"]');
		  return !!f && f.textContent.includes("acme-quotes") && f.textContent.includes("ACME is frozen") })()`)

	// A tenant-bound session sees its own tenant's records, whatever it asks for.
	browserRun(t, tab, shots, "log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#token")))
	login("globex-viewer")
	browserRun(t, tab, shots, "the list of a globex session", truthy(rows+` === "ev-globex"`), screenshot(shots, "04-globex-list"))
	browserRun(t, tab, shots, "a globex session filtering on acme",
		hash("#/?tenant=acme"), truthy(`!!document.getElementById("no-records") && `+rows+` === ""`))
	browserRun(t, tab, shots, "a globex session opening an acme request",
		hash("#/r/ev-acme"), truthy(`!!document.getElementById("request-error")`), screenshot(shots, "05-globex-forbidden"))
	check(t, tab, "nothing of the acme request shows", `!document.body.textContent.includes("peer_blocked") && !document.getElementById("request-id")`)
}
