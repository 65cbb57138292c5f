package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// A check through Driver.Check whose guard's denial leaves the step's phase with
// nothing that can run (each step denied, or depending on a denied one) fails the
// request: failed, lifecycle failed, cause guard_denied, and later calls are refused
// request_failed. Any step that can still run keeps it open, as do plan binding's
// denials, guard errors and a request with independent phases. The plan is
// threeStepPlan: step-2 depends on step-1, step-3 on both.
func TestCheck_ADeniedPhaseEndsTheRequest(t *testing.T) {
	type call struct {
		step    string
		params  map[string]any // nil: the accepted step's
		allowed bool
	}
	for _, tc := range []struct {
		name        string
		deny        map[string]bool // capabilities the guard denies
		broken      string          // a capability whose guard fails
		independent bool
		calls       []call
		wantErr     string // the record's error once failed; "" stays open
	}{
		{name: "the first step denied blocks its dependents", deny: map[string]bool{"forecast": true},
			calls:   []call{{step: "step-1"}},
			wantErr: "guards denied every step of phase 1: step-1 (no_forecast), step-2 (depends on step-1), step-3 (depends on step-1)"},
		{name: "a step that can still run keeps it open", deny: map[string]bool{"alerts": true},
			calls: []call{{step: "step-2"}, {step: "step-1", allowed: true}}},
		{name: "every step denied in turn", deny: map[string]bool{"forecast": true, "alerts": true, "send": true},
			calls:   []call{{step: "step-3"}, {step: "step-2"}, {step: "step-1"}},
			wantErr: "guards denied every step of phase 1: step-1 (no_forecast), step-2 (no_alerts), step-3 (no_send)"},
		{name: "an allowed step is not undone by a later denial", deny: map[string]bool{"alerts": true, "send": true},
			calls: []call{{step: "step-1", allowed: true}, {step: "step-2"}, {step: "step-3"}}},
		{name: "plan binding's denial is no call of the step", calls: []call{{step: "step-1", params: map[string]any{"city": "Bergen", "days": 2.0}}}},
		{name: "a guard error is retried, not final", broken: "forecast", calls: []call{{step: "step-1"}}},
		{name: "independent phases stay open", deny: map[string]bool{"forecast": true}, independent: true, calls: []call{{step: "step-1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			runner, err := op.Compile(op.Set{PolicyRevision: "rev", Guards: []op.Guard{{Name: "by-capability", Operations: []op.Operation{op.ToolCall},
				Check: func(_ context.Context, c op.Call) error {
					switch {
					case c.Capability == tc.broken:
						return errors.New("the guard broke")
					case tc.deny[c.Capability]:
						return op.Deny("no_"+c.Capability, "denied")
					}
					return nil
				}}}})
			if err != nil {
				t.Fatal(err)
			}
			gen := &engine.Generation{ID: "g", Pipeline: mustNew(t, nil, engine.WithCatalog(testCatalog(t))), Binding: engine.BindingStrict,
				PolicyRevision: "rev", Runner: runner}
			d, mem := memoryDriver(t, engine.Fixed{Gen: gen})
			s, err := d.Open(ctx, "r", engine.Opening{Text: "weather", PhasesIndependent: tc.independent})
			if err != nil {
				t.Fatal(err)
			}
			plan := threeStepPlan()
			if _, err := s.AfterPlanning(ctx, plan, 0); err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.calls {
				st := plan.Steps[c.step[len(c.step)-1]-'1']
				params := c.params
				if params == nil {
					params, _ = st.Metadata["parameters"].(map[string]any)
				}
				res, err := d.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: "r", StepID: st.StepID, Namespace: st.Namespace,
					AgentName: st.AgentName, Capability: st.Capability(), Parameters: params})
				if _, broken := op.AsGuardError(err); broken && tc.broken != "" {
					continue
				}
				if err != nil || res.Allowed != c.allowed {
					t.Fatalf("check %s: %+v, %v; want allowed %v", c.step, res, err, c.allowed)
				}
			}
			rec, err := mem.Get(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantErr == "" {
				if rec.Status != engine.RecordRunning || rec.Lifecycle != engine.LifecycleOpen {
					t.Errorf("record %s/%s (%s), want running/open", rec.Status, rec.Lifecycle, rec.Error)
				}
				return
			}
			if rec.Status != engine.RecordFailed || rec.Lifecycle != engine.LifecycleFailed || rec.Cause != engine.CauseGuardDenied || rec.Error != tc.wantErr {
				t.Errorf("record %s/%s cause %s: %q\nwant failed/failed cause guard_denied: %q", rec.Status, rec.Lifecycle, rec.Cause, rec.Error, tc.wantErr)
			}
			_, err = d.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-1", Namespace: "tools", AgentName: "weather",
				Capability: "forecast", Parameters: map[string]any{"city": "Oslo", "days": 2.0}})
			if r, ok := engine.AsRefusal(err); !ok || r.Code != engine.RefusedRequestFailed {
				t.Errorf("a check after the phase was denied: %v, want request_failed", err)
			}
		})
	}
}
