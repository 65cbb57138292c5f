package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// TestOpening_PhasesIndependent: by default the required hook's rejection fails the
// request; a request opened with independent phases records the rejection, refuses
// that phase and reviews the next one afresh.
func TestOpening_PhasesIndependent(t *testing.T) {
	catalog, err := engine.NewCatalog([]engine.CatalogAgent{{Namespace: "ns", Agent: "tools", Capabilities: []engine.Capability{{Name: "echo"}, {Name: "wipe"}}}})
	if err != nil {
		t.Fatal(err)
	}
	review := &requiredHook{planHook{name: "review", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		if plan.Steps[0].Capability() == "wipe" {
			return nil, errors.New("wipe is not allowed")
		}
		return plan, nil
	}}}
	p, err := engine.New([]engine.Hook{review}, engine.WithCatalog(catalog))
	if err != nil {
		t.Fatal(err)
	}
	plan := func(id, capability string) *engine.RoutingPlan {
		return &engine.RoutingPlan{PlanID: "p-" + id, Steps: []engine.RoutingStep{{
			StepID: id, Namespace: "ns", AgentName: "tools", Metadata: map[string]any{"capability": capability},
		}}}
	}
	for _, tc := range []struct {
		name        string
		independent bool
		wantNext    error // the error of the phase after the rejection
		wantStatus  engine.RecordStatus
	}{
		{"a rejection fails the request", false, &engine.RefusalError{Code: engine.RefusedRequestFailed}, engine.RecordFailed},
		{"independent phases go on", true, nil, engine.RecordRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, mem := memoryDriver(t, engine.Fixed{Gen: &engine.Generation{ID: "gen-test", Pipeline: p}})
			ctx := context.Background()
			o := engine.Opening{PhasesIndependent: tc.independent}
			phase := func(id, capability string) error {
				sess, err := d.Resume(ctx, engine.StageAfterPlanning, "req-1", o)
				if err != nil {
					return err
				}
				_, err = sess.AfterPlanning(ctx, plan(id, capability), 0)
				return err
			}
			if err := phase("step-1", "wipe"); !isRequiredRejection(err) {
				t.Fatalf("wipe: %v, want the required hook's rejection", err)
			}
			err = phase("step-2", "echo")
			if r, ok := engine.AsRefusal(err); tc.wantNext != nil && (!ok || r.Code != engine.RefusedRequestFailed) || tc.wantNext == nil && err != nil {
				t.Fatalf("the next phase: %v, want %v", err, tc.wantNext)
			}
			rec, err := mem.Get(ctx, "req-1")
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != tc.wantStatus || len(rec.Rejections) != 1 || rec.Rejections[0].Hook != "review" {
				t.Fatalf("record: status %s, rejections %+v; want %s and the one rejection", rec.Status, rec.Rejections, tc.wantStatus)
			}
			if tc.independent && (len(rec.Phases) != 1 || rec.Phases[0].Plan.Steps[0].StepID != "step-2") {
				t.Errorf("phases = %+v, want step-2 accepted", rec.Phases)
			}
		})
	}
}
