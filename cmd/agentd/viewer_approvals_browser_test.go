package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestViewer_ApprovalsInBrowser: in headless Chromium, the approvals page lists a held
// trade; a viewer's session sees no buttons; an approver's session approves it with a
// comment (the viewer's one write, sent with the session's CSRF token), and the API
// then has it approved by the approver's token name.
func TestViewer_ApprovalsInBrowser(t *testing.T) {
	tab := browse(t, 3*time.Minute)
	shots := artifacts(t)
	dir := copyExample(t, "stock-agent")
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(tokens, []byte(`- {token: orch-token, role: orchestrator}
- {token: approver-token, role: approver, name: desk-lead}
- {token: viewer-token, role: viewer}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, "--token-file", tokens)
	orch := []string{"Authorization", "Bearer orch-token"}
	for _, c := range []struct{ path, body string }{
		{"/v1/hooks/before_planning", `{"request_id":"big","request":"Buy ACME for 25000","metadata":{"tenant":"acme"}}`},
		{"/v1/hooks/after_planning", `{"request_id":"big","plan":{"plan_id":"p","steps":[{"step_id":"step-1","agent_name":"broker","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"symbol":"ACME","amount":25000}}}]}}`},
	} {
		if code, body := d.do(t, "POST", c.path, c.body, orch...); code != http.StatusOK {
			t.Fatalf("POST %s = %d %s", c.path, code, body)
		}
	}
	code, body := d.do(t, "POST", "/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"big","step_id":"step-1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"symbol":"ACME","amount":25000}}}`, orch...)
	var held struct{ Approval struct{ ID string } }
	if err := json.Unmarshal([]byte(body), &held); code != http.StatusForbidden || err != nil || held.Approval.ID == "" {
		t.Fatalf("the held trade: %d %s", code, body)
	}
	row := fmt.Sprintf(`document.querySelector('tr[data-approval=%q]')`, held.Approval.ID)
	login := func(token string) {
		browserRun(t, tab, shots, "log in as "+token,
			chromedp.Navigate(d.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SetValue(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS(`#login button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS("#records")), hash("#/approvals"), truthy("!!"+row))
	}
	login("viewer-token")
	browserRun(t, tab, shots, "the viewer's approvals page", screenshot(shots, "01-viewer-approvals"))
	check(t, tab, "the held trade is listed as pending", row+`.dataset.status === "pending" && `+row+`.textContent.includes("trade-limit")`)
	check(t, tab, "a viewer's session gets no buttons", `!`+row+`.querySelector("button.approve")`)
	browserRun(t, tab, shots, "log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#token")))

	login("approver-token")
	browserRun(t, tab, shots, "approve with a comment",
		chromedp.SetValue(chromedp.CSS(`tr[data-approval="`+held.Approval.ID+`"] input.comment`), "checked with the client"),
		chromedp.Click(chromedp.CSS(`tr[data-approval="`+held.Approval.ID+`"] button.approve`)),
		truthy(row+` && `+row+`.dataset.status === "approved"`), screenshot(shots, "02-approved"))
	check(t, tab, "the page shows who decided", row+`.textContent.includes("desk-lead: checked with the client")`)

	code, body = d.do(t, "GET", "/v1/approvals/"+held.Approval.ID, "", "Authorization", "Bearer viewer-token")
	var a struct {
		Status    string `json:"status"`
		DecidedBy string `json:"decided_by"`
		Comment   string `json:"comment"`
	}
	_ = json.Unmarshal([]byte(body), &a)
	if code != http.StatusOK || a.Status != "approved" || a.DecidedBy != "desk-lead" || a.Comment != "checked with the client" {
		t.Fatalf("the approval after the viewer's decision: %d %s", code, body)
	}
}
