package builtin_test

import (
	"reflect"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// planHook is a hooks section with one optional after_planning hook named edit.
func planHook(steps string) string {
	return hooks(catalogYAML, `hooks:
  - name: edit
    stage: after_planning
    steps:
`+steps+"\n")
}

// mixedPlan is a 4-step plan: quote, news, quote, news; only step-2 depends on step-1.
func mixedPlan() *engine.RoutingPlan {
	p := quotePlan(4)
	for i := range p.Steps {
		p.Steps[i].DependsOn = nil
	}
	p.Steps[1].DependsOn = []string{"step-1"}
	p.Steps[1].Metadata["capability"] = "news"
	p.Steps[3].Metadata["capability"] = "news"
	return p
}

func TestPlanRemoveSteps_Where(t *testing.T) {
	tests := []struct {
		name       string
		where      string
		phase      int
		wantIDs    []string
		wantReason engine.Reason
		wantErr    string
	}{
		{
			name:       "by capability",
			where:      `step.metadata.capability == 'news'`,
			wantIDs:    []string{"step-1", "step-3"},
			wantReason: engine.ReasonAccepted,
		},
		{
			name:       "by parameter",
			where:      `step.metadata.parameters.symbol in ['GLOBEX', 'HOOLI']`,
			wantIDs:    []string{"step-1", "step-2"},
			wantReason: engine.ReasonAccepted,
		},
		{
			name:       "nothing matches",
			where:      `false`,
			wantIDs:    []string{"step-1", "step-2", "step-3", "step-4"},
			wantReason: engine.ReasonAccepted,
		},
		{
			name:       "every step of a terminal plan",
			where:      `true`,
			wantIDs:    []string{},
			wantReason: engine.ReasonAccepted,
		},
		{
			name:       "by phase",
			where:      `phase == 2 && step.step_id == 'step-4'`,
			phase:      2,
			wantIDs:    []string{"step-1", "step-2", "step-3"},
			wantReason: engine.ReasonAccepted,
		},
		{
			// plan is the plan as the action found it, not a half-filtered one.
			name:       "by the whole plan",
			where:      `plan.steps[1].step_id == 'step-2' && step.metadata.capability == 'news'`,
			wantIDs:    []string{"step-1", "step-3"},
			wantReason: engine.ReasonAccepted,
		},
		{
			name:       "removing a dependency makes the plan invalid",
			where:      `step.step_id == 'step-1'`,
			wantIDs:    []string{"step-1", "step-2", "step-3", "step-4"},
			wantReason: engine.ReasonInvalidPlan,
			wantErr:    "step-1",
		},
		{
			name:       "an evaluation error is a hook error",
			where:      `step.metadata.parameters.missing == 'x'`,
			wantIDs:    []string{"step-1", "step-2", "step-3", "step-4"},
			wantReason: engine.ReasonHookError,
			wantErr:    "plan.remove_steps where: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen := loadHooks(t, planHook(`      - plan.remove_steps: {where: "`+tt.where+`"}`))
			plan := mixedPlan()
			if tt.phase != 0 {
				plan.PhaseNumber = tt.phase
			}
			got, invs, err := runAfter(t, gen, &engine.PipelineContext{}, plan)
			if err != nil {
				t.Fatalf("AfterPlanning: %v", err)
			}
			if ids := stepIDs(got); !reflect.DeepEqual(ids, tt.wantIDs) {
				t.Errorf("steps = %v, want %v", ids, tt.wantIDs)
			}
			if ids := stepIDs(plan); len(ids) != 4 {
				t.Errorf("the incoming plan was mutated: %v", ids)
			}
			status := engine.InvocationSucceeded
			if tt.wantErr != "" {
				status = engine.InvocationFailed
				if got != plan {
					t.Errorf("a rejected rewrite must leave the incoming plan in place")
				}
			}
			wantInvocations(t, invs, 1)
			wantInvocation(t, invs[0], "edit", status, tt.wantReason, tt.wantErr)
			if invs[0].PlanPhase != max(tt.phase, 1) {
				t.Errorf("plan_phase = %d, want %d", invs[0].PlanPhase, max(tt.phase, 1))
			}
		})
	}
}

// Steps of one hook chain: a later step sees the plan an earlier one rewrote, and the
// next hook gets the accepted plan.
func TestPlanRemoveSteps_Chaining(t *testing.T) {
	gen := loadHooks(t, hooks(catalogYAML, `hooks:
  - name: edit
    stage: after_planning
    steps:
      - plan.remove_steps: {where: "step.metadata.capability == 'news'"}
      - plan.set_metadata: {key: remaining, value: "size(plan.steps)"}
  - name: trim
    stage: after_planning
    steps:
      - plan.remove_steps: {where: "step.metadata.remaining == 2 && step.step_id == 'step-3'"}
`))
	got, invs, err := runAfter(t, gen, &engine.PipelineContext{}, mixedPlan())
	if err != nil {
		t.Fatalf("AfterPlanning: %v", err)
	}
	if ids := stepIDs(got); !reflect.DeepEqual(ids, []string{"step-1"}) {
		t.Errorf("steps = %v, want [step-1]", ids)
	}
	if got.Steps[0].Metadata["remaining"] != int64(2) {
		t.Errorf("metadata = %v, want remaining 2", got.Steps[0].Metadata)
	}
	wantInvocations(t, invs, 2)
	wantInvocation(t, invs[0], "edit", engine.InvocationSucceeded, engine.ReasonAccepted, "")
	wantInvocation(t, invs[1], "trim", engine.InvocationSucceeded, engine.ReasonAccepted, "")
}

func TestPlanSetMetadata_Values(t *testing.T) {
	tests := []struct {
		name   string
		params string
		key    string
		want   []any // metadata[key] of each step; nil means unset
	}{
		{
			name:   "every step without where",
			params: `{key: priority, value: "'high'"}`,
			key:    "priority",
			want:   []any{"high", "high", "high", "high"},
		},
		{
			name:   "only the steps matching where",
			params: `{where: "step.metadata.capability == 'news'", key: priority, value: "'low'"}`,
			key:    "priority",
			want:   []any{nil, "low", nil, "low"},
		},
		{
			name:   "a value computed from the step",
			params: `{key: label, value: "step.step_id + ':' + string(step.metadata.parameters.symbol)"}`,
			key:    "label",
			want:   []any{"step-1:ACME", "step-2:INIT", "step-3:GLOBEX", "step-4:HOOLI"},
		},
		{
			name:   "a structured value",
			params: `{where: "step.step_id == 'step-1'", key: budget, value: "{'max': 3, 'currency': 'USD'}"}`,
			key:    "budget",
			want:   []any{map[string]any{"max": int64(3), "currency": "USD"}, nil, nil, nil},
		},
		{
			name:   "replacing the parameters",
			params: `{where: "step.step_id == 'step-3'", key: parameters, value: "{'symbol': 'ACME'}"}`,
			key:    "parameters",
			want:   []any{map[string]any{"symbol": "ACME"}, map[string]any{"symbol": "INIT"}, map[string]any{"symbol": "ACME"}, map[string]any{"symbol": "HOOLI"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen := loadHooks(t, planHook(`      - plan.set_metadata: `+tt.params))
			plan := mixedPlan()
			got, invs, err := runAfter(t, gen, &engine.PipelineContext{}, plan)
			if err != nil {
				t.Fatalf("AfterPlanning: %v", err)
			}
			wantInvocations(t, invs, 1)
			wantInvocation(t, invs[0], "edit", engine.InvocationSucceeded, engine.ReasonAccepted, "")
			key := tt.key
			for i, s := range got.Steps {
				if v := s.Metadata[key]; !reflect.DeepEqual(v, tt.want[i]) {
					t.Errorf("%s metadata.%s = %#v, want %#v", s.StepID, key, v, tt.want[i])
				}
			}
			if _, ok := plan.Steps[0].Metadata["priority"]; ok {
				t.Errorf("the incoming plan was mutated")
			}
		})
	}
}

// A rewrite that breaks plan validation, or that fails to evaluate, leaves the
// previous plan in place.
func TestPlanSetMetadata_Rejected(t *testing.T) {
	tests := []struct {
		name, params string
		reason       engine.Reason
		errPart      string
	}{
		{"capability the agent lacks", `{key: capability, value: "'launch_rocket'"}`, engine.ReasonInvalidPlan, "launch_rocket"},
		{"where fails", `{where: "step.nope == 1", key: k, value: "1"}`, engine.ReasonHookError, "plan.set_metadata where: "},
		{"value fails", `{key: k, value: "step.metadata.parameters.nope"}`, engine.ReasonHookError, "plan.set_metadata value: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen := loadHooks(t, planHook(`      - plan.set_metadata: `+tt.params))
			plan := mixedPlan()
			got, invs, err := runAfter(t, gen, &engine.PipelineContext{}, plan)
			if err != nil || got != plan {
				t.Fatalf("AfterPlanning = %p, %v; want the incoming plan %p", got, err, plan)
			}
			wantInvocation(t, invs[0], "edit", engine.InvocationFailed, tt.reason, tt.errPart)
		})
	}
}
