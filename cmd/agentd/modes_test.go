package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// auditRules add, to the stock example, a plan rule in audit mode that would deny every
// quote of ACME, and a guard in warn mode that would deny quoting it at call time.
const auditRules = `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: rollout}
hooks:
  - name: acme-freeze
    stage: after_planning
    steps:
      - rego: {query: data.rollout.freeze, mode: audit}
guards:
  policy_revision: trade-limits-v2
  rules:
    - name: acme-quotes
      operation: tool_call
      mode: warn
      deny_if: "call.capability == 'stock_quote' && call.parameters.symbol == 'ACME'"
      code: acme_frozen
      reason: ACME is frozen
`

const freezePolicy = `package rollout.freeze

import rego.v1

deny contains {"code": "acme_frozen", "step_id": s.step_id, "message": "ACME is frozen"} if {
	some s in input.plan.steps
	s.metadata.parameters.symbol == "ACME"
}
`

// A new deny rule in audit mode lets traffic through (200) and the record shows what it
// would have denied; a guard in warn mode also returns it as a warning.
func TestModes_AuditAndWarnRulesNeverChangeTheOutcome(t *testing.T) {
	dir := copyExample(t, "stock-agent")
	writeFile(t, dir, "hooks/15-rollout.yaml", auditRules)
	writeFile(t, dir, "policies/rollout/freeze.rego", freezePolicy)
	d := startDaemon(t, dir)
	d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"frozen","request":"quote ACME"}`)
	status, body := d.do(t, "POST", "/v1/hooks/after_planning", `{"request_id":"frozen","plan":`+quotePlan+`}`)
	if status != 200 {
		t.Fatalf("after_planning with an audit rule = %d %s, want 200", status, body)
	}
	if strings.Contains(body, `"warnings"`) {
		t.Fatalf("an audit rule returned warnings: %s", body)
	}
	status, body = d.do(t, "POST", "/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"frozen","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"ACME"}}}`)
	var check struct {
		Allowed  bool                                `json:"allowed"`
		Warnings []struct{ Mode, Rule, Code string } `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(body), &check); err != nil || status != 200 || !check.Allowed ||
		len(check.Warnings) != 1 || check.Warnings[0].Code != "acme_frozen" || check.Warnings[0].Mode != "warn" {
		t.Fatalf("check with a warn guard = %d %s", status, body)
	}
	_, body = d.do(t, "GET", "/v1/executions/frozen", "")
	var rec struct {
		PipelineHooks []struct {
			HookName  string `json:"hook_name"`
			Mode      string `json:"mode"`
			WouldDeny []struct {
				Mode, Rule, Cause string
				Violations        []struct{ Code string } `json:"violations"`
			} `json:"would_deny"`
		} `json:"pipeline_hooks"`
		Operations []struct {
			Outcome   string                              `json:"outcome"`
			WouldDeny []struct{ Mode, Rule, Code string } `json:"would_deny"`
		} `json:"operations"`
	}
	if err := json.Unmarshal([]byte(body), &rec); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, inv := range rec.PipelineHooks {
		if inv.HookName == "acme-freeze" && len(inv.WouldDeny) == 1 {
			f := inv.WouldDeny[0]
			found = f.Mode == "audit" && f.Rule == "rego data.rollout.freeze" && f.Cause == "policy_denied" &&
				len(f.Violations) == 1 && f.Violations[0].Code == "acme_frozen"
		}
	}
	if !found {
		t.Fatalf("the record does not show the audit rule's would_deny: %s", body)
	}
	if len(rec.Operations) != 1 || rec.Operations[0].Outcome != "allow" || len(rec.Operations[0].WouldDeny) != 1 {
		t.Fatalf("operations = %+v", rec.Operations)
	}
	logs := d.stderr.String()
	if !strings.Contains(logs, `"stage":"after_planning","outcome":"accepted"`) || !strings.Contains(logs, `"would_deny":1`) {
		t.Fatalf("the log lines do not show the findings:\n%s", logs)
	}
}
