package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/cmd/agentd/internal/approvalhook"
)

// approvalTokens is the token file of the approvals test: an orchestrator, an
// approver and a viewer of tenant acme, and an approver of tenant globex.
const approvalTokens = `- {token: orch-acme, role: orchestrator, tenant: acme}
- {token: approver-acme, role: approver, tenant: acme, name: desk-lead}
- {token: viewer-acme, role: viewer, tenant: acme}
- {token: approver-globex, role: approver, tenant: globex}
`

// TestApprovals_HoldOut runs issue 37's check on the stock example, whose trade-limit
// rule has effect require_approval, with three tokens (orchestrator, approver,
// viewer): a trade above the limit is held as approval_required and listed as
// pending; neither the viewer nor the orchestrator can approve it; it is still pending
// after a restart on --data-dir; approved by the approver it passes once and a second
// check is denied; approving one request's call lets no other request's call
// through; a rejection is final; untouched calls pass as before; another tenant's
// approver neither sees nor decides it.
func TestApprovals_HoldOut(t *testing.T) {
	config, data := copyExample(t, "stock-agent"), t.TempDir()
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(tokens, []byte(approvalTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	// The webhook announces each new pending approval, signed.
	announced := make(chan approvalhook.Payload, 8)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Agentd-Signature") != approvalhook.Sign("hook-secret", body) {
			t.Errorf("webhook signature %q does not sign the body", r.Header.Get("X-Agentd-Signature"))
		}
		var p approvalhook.Payload
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("webhook body %s: %v", body, err)
		}
		announced <- p
	}))
	defer hook.Close()
	if err := os.WriteFile(filepath.Join(config, "hooks", "50-approvals.yaml"), []byte("apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: approvals}\napprovals:\n  notify: {url: "+hook.URL+", secret_env: AGENTD_APPROVAL_SECRET}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func() *daemon {
		return startDaemonEnv(t, []string{"AGENTD_APPROVAL_SECRET=hook-secret"}, config, "--data-dir", data, "--token-file", tokens)
	}
	d := start()
	as := func(token string) []string { return []string{"Authorization", "Bearer " + token} }
	type answer struct {
		Allowed bool `json:"allowed"`
		Denial  *struct {
			Code string `json:"code"`
		} `json:"denial"`
		Approval *struct {
			ID, Status, URL string
			ExpiresAt       string `json:"expires_at"`
		} `json:"approval"`
		Status     string                                   `json:"status"`
		DecidedBy  string                                   `json:"decided_by"`
		Approvals  []struct{ ID, Status, RequestID string } `json:"approvals"`
		Error      *struct{ Type string }                   `json:"error"`
		Operations []struct {
			Outcome  string `json:"outcome"`
			Approval *struct {
				ID, Status string
				DecidedBy  string `json:"decided_by"`
				Comment    string `json:"comment"`
			} `json:"approval"`
		} `json:"operations"`
	}
	call := func(d *daemon, token, method, path, body string, want int) answer {
		t.Helper()
		status, text := d.do(t, method, path, body, as(token)...)
		if status != want {
			t.Fatalf("%s %s as %s = %d %s, want %d", method, path, token, status, text, want)
		}
		var a answer
		if err := json.Unmarshal([]byte(text), &a); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, text)
		}
		return a
	}
	trade := func(id string, amount string) string {
		return `{"operation":"tool_call","call":{"request_id":"` + id + `","step_id":"step-1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"symbol":"ACME","amount":` + amount + `}}}`
	}
	open := func(id, amount string) {
		t.Helper()
		call(d, "orch-acme", "POST", "/v1/hooks/before_planning", `{"request_id":"`+id+`","request":"Buy ACME","metadata":{"tenant":"acme"}}`, 200)
		call(d, "orch-acme", "POST", "/v1/hooks/after_planning", `{"request_id":"`+id+`","plan":{"plan_id":"p-`+id+`","steps":[{"step_id":"step-1","agent_name":"broker","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"symbol":"ACME","amount":`+amount+`}}}]}}`, 200)
	}
	open("big", "25000")
	open("other", "25000")
	open("small", "500")

	held := call(d, "orch-acme", "POST", "/v1/operations/check", trade("big", "25000"), 403)
	if held.Allowed || held.Denial.Code != "approval_required" || held.Approval == nil || held.Approval.Status != "pending" ||
		held.Approval.URL != "/v1/approvals/"+held.Approval.ID || held.Approval.ExpiresAt == "" {
		t.Fatalf("the big trade = %+v; want approval_required with a pending approval", held)
	}
	id := held.Approval.ID
	other := call(d, "orch-acme", "POST", "/v1/operations/check", trade("other", "25000"), 403)
	if other.Approval == nil || other.Approval.ID == id {
		t.Fatalf("the other request's identical trade = %+v; want an approval of its own", other)
	}
	for _, want := range []string{id, other.Approval.ID} {
		select {
		case p := <-announced:
			if p.Event != "approval.pending" || p.Approval.ID != want || p.Approval.Tenant != "acme" || p.Approval.RequestID == "" {
				t.Fatalf("announcement = %+v, want %s", p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no announcement of %s", want)
		}
	}
	pending := call(d, "viewer-acme", "GET", "/v1/approvals?status=pending", "", 200)
	if len(pending.Approvals) != 2 {
		t.Fatalf("pending approvals as the viewer = %+v, want 2", pending.Approvals)
	}
	for _, token := range []string{"viewer-acme", "orch-acme"} {
		if a := call(d, token, "POST", "/v1/approvals/"+id, `{"decision":"approve"}`, 403); a.Error == nil || a.Error.Type != "forbidden" {
			t.Fatalf("%s approving = %+v; want 403 forbidden", token, a)
		}
	}
	call(d, "orch-acme", "GET", "/v1/approvals", "", 403)
	if theirs := call(d, "approver-globex", "GET", "/v1/approvals", "", 200); len(theirs.Approvals) != 0 {
		t.Fatalf("another tenant's approver sees %+v", theirs.Approvals)
	}
	call(d, "approver-globex", "POST", "/v1/approvals/"+id, `{"decision":"approve"}`, 404)

	d.stop(t)
	d = start()
	if a := call(d, "approver-acme", "GET", "/v1/approvals/"+id, "", 200); a.Status != "pending" {
		t.Fatalf("after the restart the approval is %+v, want pending", a)
	}

	approved := call(d, "approver-acme", "POST", "/v1/approvals/"+id, `{"decision":"approve","comment":"client confirmed"}`, 200)
	if approved.Status != "approved" || approved.DecidedBy != "desk-lead" {
		t.Fatalf("approve = %+v; want approved by desk-lead", approved)
	}
	call(d, "approver-acme", "POST", "/v1/approvals/"+id, `{"decision":"approve"}`, 200) // idempotent
	call(d, "approver-acme", "POST", "/v1/approvals/"+id, `{"decision":"reject"}`, 409)
	if changed := call(d, "orch-acme", "POST", "/v1/operations/check", trade("big", "25001"), 403); changed.Denial.Code != "plan_mismatch" {
		t.Fatalf("the big trade with another amount = %+v; want plan_mismatch", changed)
	}
	if still := call(d, "orch-acme", "POST", "/v1/operations/check", trade("other", "25000"), 403); still.Denial.Code != "approval_required" {
		t.Fatalf("the other request after approving the first = %+v; want approval_required", still)
	}
	if ok := call(d, "orch-acme", "POST", "/v1/operations/check", trade("big", "25000"), 200); !ok.Allowed || ok.Approval.ID != id {
		t.Fatalf("the approved trade = %+v; want allowed", ok)
	}
	call(d, "orch-acme", "POST", "/v1/operations/finish", `{"request_id":"big","step_id":"step-1","status":"succeeded"}`, 200)
	if again := call(d, "orch-acme", "POST", "/v1/operations/check", trade("big", "25000"), 403); again.Denial.Code != "step_already_executed" {
		t.Fatalf("the approved trade again = %+v; want step_already_executed", again)
	}

	call(d, "approver-acme", "POST", "/v1/approvals/"+other.Approval.ID, `{"decision":"reject","comment":"too large"}`, 200)
	if r := call(d, "orch-acme", "POST", "/v1/operations/check", trade("other", "25000"), 403); r.Denial.Code != "approval_rejected" {
		t.Fatalf("the rejected trade = %+v; want approval_rejected", r)
	}
	// A rejection is final: the phase has nothing left that can run, so the request
	// failed (guard_denied, docs/semantics.md §8.8); a pending approval never did that.
	call(d, "orch-acme", "POST", "/v1/operations/check", trade("other", "25000"), 409)
	call(d, "approver-acme", "POST", "/v1/approvals/"+other.Approval.ID, `{"decision":"approve"}`, 409)
	if small := call(d, "orch-acme", "POST", "/v1/operations/check", trade("small", "500"), 200); small.Approval != nil {
		t.Fatalf("an untouched trade = %+v; want allowed without approval", small)
	}

	rec := call(d, "viewer-acme", "GET", "/v1/executions/big", "", 200)
	var marks []string
	for _, o := range rec.Operations {
		if o.Approval != nil {
			marks = append(marks, o.Outcome+" "+o.Approval.Status+" "+o.Approval.DecidedBy+" "+o.Approval.Comment)
		}
	}
	if want := "deny pending  |allow approved desk-lead client confirmed"; strings.Join(marks, "|") != want {
		t.Fatalf("the record's approval marks = %q, want %q", strings.Join(marks, "|"), want)
	}
}
