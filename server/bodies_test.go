package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/api"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/policy"
)

// sameAsEncoder fails unless writeJSON writes for v what encoding/json's Encoder with
// SetEscapeHTML(false) writes, the slow path writeJSON has for every body.
func sameAsEncoder(t *testing.T, v any) {
	t.Helper()
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, v)
	if !bytes.Equal(rec.Body.Bytes(), want.Bytes()) {
		t.Fatalf("writeJSON:\n %s\nencoding/json:\n %s", rec.Body, want.Bytes())
	}
}

// The fast responses write what encoding/json writes, members present and absent.
func TestFastResponses_AgreeWithEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 2, 3, 456, time.FixedZone("", 3600))
	inv := engine.Invocation{HookName: "allowed <ops> & more", Phase: engine.StageAfterPlanning, Status: engine.InvocationFailed,
		Sequence: 2, PlanPhase: 3, StartedAt: at, Duration: 1500, Error: "caf\xe9 \u2028",
		Decision:   &engine.DecisionRecord{FailurePolicy: engine.FailClosed, Action: engine.ActionTerminate, Reason: engine.ReasonHookError, Cause: engine.CausePolicyDenied},
		DecisionID: "d-1", Mode: engine.RuleAudit, TraceID: "t", SpanID: "s",
		Effects:   []engine.Effect{{EffectID: "e", Status: engine.EffectPending, Data: json.RawMessage(`{"x":"<y>"}`), StartedAt: at}},
		WouldDeny: []engine.Finding{{Mode: engine.RuleWarn, Rule: "r", Violations: []engine.Violation{{Code: "c", Message: "a < b"}}}},
	}
	plan := &engine.RoutingPlan{PlanID: "p<1>", CreatedAt: at, Steps: []engine.RoutingStep{{StepID: "s1", DependsOn: []string{},
		Metadata: map[string]any{"capability": "c&d", "parameters": map[string]any{"n": 1.5, "z": nil}}}}}
	for name, v := range map[string]*api.AfterPlanningResponse{
		"no plan, no invocations":             {DecisionID: "d", RequestID: "r", Generation: "g"},
		"empty invocations":                   {DecisionID: "d", Plan: &engine.RoutingPlan{}, Invocations: []engine.Invocation{}},
		"every member":                        {DecisionID: "d", RequestID: "r<1>", Generation: "g", Plan: plan, Invocations: []engine.Invocation{inv, {}}},
		"warnings (left to encoding/json)":    {DecisionID: "d", Warnings: []engine.Finding{{Mode: engine.RuleWarn, Rule: "<r>"}}, Plan: plan},
		"explanation (left to encoding/json)": {DecisionID: "d", Plan: plan, Explanation: []*policy.Explanation{{}}},
	} {
		t.Run(name, func(t *testing.T) { sameAsEncoder(t, v) })
	}
}
