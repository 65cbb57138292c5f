package config_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

func loadDecisionLog(t *testing.T, body string) *config.DecisionLog {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"hooks/log.yaml": hookSet("log", body)})
	return mustLoad(t, dir).DecisionLog
}

func TestDecisionLog_MaskErasesAndReplacesWithoutChangingThePayload(t *testing.T) {
	dl := loadDecisionLog(t, `
decision_log:
  mask:
    - metadata.email
    - plan.steps[*].metadata.parameters.account
    - {path: call.parameters.card, value: "****"}
    - enrichments.absent
    - prior_steps.1
`)
	metadata := map[string]any{"email": "ann@example.com", "tenant": "acme"}
	plan := &engine.RoutingPlan{PlanID: "p1", Steps: []engine.RoutingStep{
		{StepID: "step-1", Metadata: map[string]any{"parameters": map[string]any{"account": "DE-1", "amount": 5.0}}},
		{StepID: "step-2", Metadata: map[string]any{"capability": "quote"}},
	}}
	call := op.Call{Operation: op.ToolCall, Parameters: map[string]any{"card": "4111", "n": 1.0}}
	prior := []engine.RoutingStep{{StepID: "a"}, {StepID: "b"}, {StepID: "c"}}
	payload := map[string]any{"metadata": metadata, "plan": plan, "call": call, "prior_steps": prior, "request": "hi"}
	before, _ := json.Marshal(payload)

	out, erased, replaced := dl.Mask(payload)
	if after, _ := json.Marshal(payload); string(after) != string(before) {
		t.Fatalf("Mask changed its payload:\n%s\n%s", before, after)
	}
	encoded, _ := json.Marshal(out)
	for _, secret := range []string{"ann@example.com", "DE-1", "4111", `"step_id":"b"`} {
		if strings.Contains(string(encoded), secret) {
			t.Errorf("masked payload still holds %s: %s", secret, encoded)
		}
	}
	for _, kept := range []string{`"tenant":"acme"`, `"amount":5`, `"card":"****"`, `"n":1`, `"step_id":"c"`, `"request":"hi"`} {
		if !strings.Contains(string(encoded), kept) {
			t.Errorf("masked payload lost %s: %s", kept, encoded)
		}
	}
	if want := []string{"metadata.email", "plan.steps[*].metadata.parameters.account", "prior_steps.1"}; !reflect.DeepEqual(erased, want) {
		t.Errorf("erased = %v, want %v (a path that names nothing is not listed)", erased, want)
	}
	if want := []string{"call.parameters.card"}; !reflect.DeepEqual(replaced, want) {
		t.Errorf("replaced = %v, want %v", replaced, want)
	}
	var none *config.DecisionLog
	if out, erased, _ := none.Mask(payload); !reflect.DeepEqual(out, payload) || erased != nil {
		t.Error("a nil DecisionLog masked something")
	}
}

// A path through a value with no JSON form erases that value whole.
func TestDecisionLog_MaskErasesWhatItCannotInspect(t *testing.T) {
	dl := loadDecisionLog(t, "decision_log: {mask: [result.steps]}\n")
	out, erased, _ := dl.Mask(map[string]any{"result": func() {}})
	if out["result"] != nil || len(erased) != 1 {
		t.Fatalf("masked = %v, erased %v: want result erased", out, erased)
	}
}

func TestDecisionLog_Drops(t *testing.T) {
	dl := loadDecisionLog(t, `
decision_log:
  drop:
    - {stage: after_execution}
    - {kind: check, operation: [tool_call, inference], outcome: allowed}
`)
	for _, tc := range []struct {
		facts config.LogFacts
		drop  bool
	}{
		{config.LogFacts{Kind: config.EventStage, Stage: "after_execution", Outcome: "completed"}, true},
		{config.LogFacts{Kind: config.EventStage, Stage: "after_planning", Outcome: "accepted"}, false},
		{config.LogFacts{Kind: config.EventCheck, Operation: "tool_call", Outcome: "allowed"}, true},
		{config.LogFacts{Kind: config.EventCheck, Operation: "inference", Outcome: "allowed"}, true},
		{config.LogFacts{Kind: config.EventCheck, Operation: "tool_call", Outcome: "denied"}, false},
		{config.LogFacts{Kind: config.EventCheck, Operation: "turn", Outcome: "allowed"}, false},
	} {
		if got := dl.Drops(tc.facts); got != tc.drop {
			t.Errorf("Drops(%+v) = %v, want %v", tc.facts, got, tc.drop)
		}
	}
}

func TestParseLogPath(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"metadata.email", ""},
		{"plan.steps[*].metadata.parameters", ""},
		{"plan.steps[0][*]", ""},
		{"call.parameters.*", ""},
		{"response", ""},
		{"", "empty"},
		{"meta.email", "no payload field"},
		{"metadata..email", "empty segment"},
		{"plan.steps[-1]", "[*] or [N]"},
		{"plan.[0]", "needs a name"},
		{"plan.steps[0", "[*] or [N]"},
		{"metadata.e mail", "may hold only"},
	} {
		_, err := config.ParseLogPath(tc.in)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseLogPath(%q) = %v, want an error containing %q", tc.in, err, tc.err)
		}
	}
}
