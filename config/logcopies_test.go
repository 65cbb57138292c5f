package config_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// maskEvents are the payloads of one request's decision events, as the decision log
// builds them: the plan review (request, prior steps, plan, accepted plan), the
// execution report (result) and a check of step-2's call. Step-2 is at index 1 of the
// plan and at index 0 of the accepted plan; each step carries an account of its own.
func maskEvents() map[string]map[string]any {
	step := func(id, account string) engine.RoutingStep {
		return engine.RoutingStep{StepID: id, AgentName: "bank", Namespace: "tools", Instruction: "pay",
			Metadata: map[string]any{"capability": "pay-" + id, "parameters": map[string]any{"account": account, "amount": 5.0}}}
	}
	request := "pay the rent from REQUEST-TEXT"
	plan := &engine.RoutingPlan{PlanID: "p2", OriginalRequest: request, Steps: []engine.RoutingStep{step("step-1", "ACC-ONE"), step("step-2", "ACC-TWO")}}
	accepted := &engine.RoutingPlan{PlanID: "p2", OriginalRequest: request, Steps: []engine.RoutingStep{step("step-2", "ACC-TWO"), step("step-1", "ACC-ONE")}}
	result := &engine.ExecutionResult{PlanID: "p2", Steps: []engine.StepResult{
		{StepID: "step-0", AgentName: "bank", Capability: "pay-step-0", Parameters: map[string]any{"account": "ACC-PRIOR"}, Response: "RESPONSE-0", Success: true},
		{StepID: "step-1", AgentName: "bank", Capability: "pay-step-1", Parameters: map[string]any{"account": "ACC-ONE", "amount": 5.0}, Response: "RESPONSE-1", Success: true},
		{StepID: "step-2", AgentName: "bank", Capability: "pay-step-2", Parameters: map[string]any{"account": "ACC-TWO", "amount": 5.0}, Response: "RESPONSE-2", Success: true},
	}}
	call := op.Call{Operation: op.ToolCall, RequestID: "r1", StepID: "step-2", AgentName: "bank", Capability: "pay-step-2",
		Parameters: map[string]any{"account": "ACC-TWO", "amount": 5.0}, Phase: 2}
	return map[string]map[string]any{
		"after_planning":  {"request": request, "prior_steps": []engine.RoutingStep{step("step-0", "ACC-PRIOR")}, "plan": plan, "accepted_plan": accepted},
		"after_execution": {"request": request, "result": result},
		"check":           {"request": request, "call": call},
	}
}

// A mask applies to every copy of what it names in an event: whatever field a mask on
// a step's member names, the member is masked in the plan, the accepted plan, the
// prior steps, the result's steps and the call, in every event; an index selects the
// same step (by step_id) in the event's other fields, and nothing where the event
// lacks the field it names; the request's text is masked in each plan's
// original_request. What no mask names stays.
func TestDecisionLog_MaskAppliesToEveryCopy(t *testing.T) {
	all := []string{"after_planning", "after_execution", "check"}
	for _, tc := range []struct {
		mask string
		// gone: values no event may hold; kept: event -> values it must still hold.
		gone   []string
		kept   map[string][]string
		events []string // the events the case reads, when not all
	}{
		{mask: "plan.steps[*].metadata.parameters.account", gone: []string{"ACC-ONE", "ACC-TWO", "ACC-PRIOR"},
			kept: map[string][]string{"after_planning": {`"amount":5`, "pay-step-1"}, "after_execution": {`"amount":5`, "RESPONSE-1"}, "check": {`"amount":5`}}},
		{mask: "call.parameters.account", gone: []string{"ACC-ONE", "ACC-TWO", "ACC-PRIOR"},
			kept: map[string][]string{"after_planning": {`"amount":5`}, "check": {`"step_id":"step-2"`}}},
		{mask: "result.steps.*.parameters.account", gone: []string{"ACC-ONE", "ACC-TWO", "ACC-PRIOR"}},
		{mask: "prior_steps[*].metadata.parameters.account", gone: []string{"ACC-ONE", "ACC-TWO", "ACC-PRIOR"}},
		{mask: "accepted_plan.steps[*].metadata.parameters", gone: []string{"ACC-ONE", "ACC-TWO", "ACC-PRIOR", `"amount"`},
			kept: map[string][]string{"after_planning": {"pay-step-1"}, "after_execution": {"pay-step-1"}}},
		{mask: "plan.steps[*].metadata", gone: []string{"ACC-ONE", "ACC-TWO", "ACC-PRIOR", "pay-step"},
			kept: map[string][]string{"after_planning": {`"instruction":"pay"`}, "after_execution": {"RESPONSE-2"}, "check": {`"operation":"tool_call"`}}},
		{mask: "result.*.*", gone: []string{"ACC-ONE", "ACC-TWO", "ACC-PRIOR", "pay-step", "RESPONSE-1", `"agent_name"`, `"step_id"`},
			kept: map[string][]string{"after_planning": {`"instruction":"pay"`}, "check": {`"operation":"tool_call"`, `"phase":2`}}},
		// By index: step-2 of the plan, found by its id in the accepted plan and the
		// result only where the plan is in the event.
		{mask: "plan.steps[1].metadata.parameters.account", gone: nil,
			kept: map[string][]string{"after_planning": {"ACC-ONE", "ACC-PRIOR"}, "after_execution": {"ACC-TWO"}, "check": {"ACC-TWO"}}},
		{mask: "request", gone: []string{"REQUEST-TEXT"}, kept: map[string][]string{"after_planning": {`"plan_id":"p2"`}}},
		{mask: "accepted_plan.original_request", gone: []string{"REQUEST-TEXT"}},
		// A plan's members are the accepted plan's; the result's plan_id is its own.
		{mask: "accepted_plan.plan_id", events: []string{"after_planning"}, gone: []string{`"plan_id":"p2"`}},
		{mask: "plan.plan_id", events: []string{"after_execution"}, kept: map[string][]string{"after_execution": {`"plan_id":"p2"`}}},
	} {
		t.Run(tc.mask, func(t *testing.T) {
			dl := loadDecisionLog(t, "decision_log: {mask: ['"+tc.mask+"']}\n")
			events := all
			if tc.events != nil {
				events = tc.events
			}
			for _, event := range events {
				payload := maskEvents()[event]
				before, _ := json.Marshal(payload)
				out, erased, _ := dl.Mask(payload)
				if after, _ := json.Marshal(payload); string(after) != string(before) {
					t.Fatalf("%s: Mask changed its payload", event)
				}
				encoded, _ := json.Marshal(out)
				for _, v := range tc.gone {
					if strings.Contains(string(encoded), v) {
						t.Errorf("%s: masked payload still holds %s: %s", event, v, encoded)
					}
				}
				for _, v := range tc.kept[event] {
					if !strings.Contains(string(encoded), v) {
						t.Errorf("%s: masked payload lost %s: %s", event, v, encoded)
					}
				}
				if (string(encoded) != string(before)) != (len(erased) > 0) {
					t.Errorf("%s: erased %v, but the payload changed: %v", event, erased, string(encoded) != string(before))
				}
			}
		})
	}
}

// By index, a mask names the copies it masked by their own paths, so that a reader of
// the event (agentd replay) knows every place that was masked.
func TestDecisionLog_MaskNamesEveryCopyItMasked(t *testing.T) {
	dl := loadDecisionLog(t, "decision_log:\n  mask:\n    - plan.steps[1].metadata.parameters.account\n    - {path: call.parameters.account, value: '****'}\n    - plan.original_request\n")
	out, erased, replaced := dl.Mask(maskEvents()["after_planning"])
	if want := []string{"plan.steps[1].metadata.parameters.account", "accepted_plan.steps.0.metadata.parameters.account",
		"plan.original_request", "accepted_plan.original_request", "request"}; !slices.Equal(erased, want) {
		t.Errorf("erased = %q, want %q", erased, want)
	}
	if want := []string{"plan.steps.*.metadata.parameters.account", "accepted_plan.steps.*.metadata.parameters.account",
		"prior_steps.*.metadata.parameters.account"}; !slices.Equal(replaced, want) {
		t.Errorf("replaced = %q, want %q", replaced, want)
	}
	encoded, _ := json.Marshal(out)
	if n := strings.Count(string(encoded), `"account":"****"`); n != 3 {
		t.Errorf("%d accounts replaced, want 3 (step-1's in both plans, step-0's; step-2's erased first): %s", n, encoded)
	}
	if _, ok := out["request"]; ok {
		t.Errorf("request kept: %s", encoded)
	}
}
