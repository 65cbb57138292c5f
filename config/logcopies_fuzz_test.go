package config

import (
	"encoding/json"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// FuzzMask_Copies: for any mask path that parses, masking never panics, never changes
// the payload it is given, and names only paths that parse themselves (a copy's path
// is a mask path a reader such as agentd replay can read back).
func FuzzMask_Copies(f *testing.F) {
	for _, s := range []string{"plan.steps[*].metadata.parameters.account", "call.parameters.*", "result.*.*", "plan",
		"prior_steps.0", "accepted_plan.steps.1.metadata", "request", "plan.*", "call", "result.steps[2].parameters.a.b"} {
		f.Add(s)
	}
	step := engine.RoutingStep{StepID: "s1", AgentName: "a", Namespace: "n", Instruction: "i",
		Metadata: map[string]any{"capability": "c", "parameters": map[string]any{"account": "x", "a": map[string]any{"b": 1.0}}}}
	plan := &engine.RoutingPlan{PlanID: "p", OriginalRequest: "r", Steps: []engine.RoutingStep{step, step}}
	payload := map[string]any{
		"request": "r", "plan": plan, "accepted_plan": plan, "prior_steps": []engine.RoutingStep{step},
		"result": &engine.ExecutionResult{PlanID: "p", Steps: []engine.StepResult{{StepID: "s1", Parameters: map[string]any{"account": "x"}}}},
		"call":   op.Call{Operation: op.ToolCall, StepID: "s1", Parameters: map[string]any{"account": "x"}},
	}
	before, _ := json.Marshal(payload)
	f.Fuzz(func(t *testing.T, path string) {
		p, err := ParseLogPath(path)
		if err != nil {
			return
		}
		for _, replace := range []bool{false, true} {
			d := &DecisionLog{masks: []MaskRule{{Path: p, Replace: replace, Value: "****"}}}
			_, erased, replaced := d.Mask(payload)
			if after, _ := json.Marshal(payload); string(after) != string(before) {
				t.Fatalf("masking %q changed the payload", path)
			}
			for _, named := range append(erased, replaced...) {
				if _, err := ParseLogPath(named); err != nil {
					t.Fatalf("masking %q named %q, which does not parse: %v", path, named, err)
				}
			}
		}
	})
}
