package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// flowState is a request state with every part of its information flow set: labels,
// history, the count of reported finishes, phase marks and a run's labels.
func flowState(id string) *engine.RequestState {
	return &engine.RequestState{ID: id, Revision: 1, Phase: 2, PriorSteps: []engine.RoutingStep{{StepID: "step-1"}, {StepID: "step-2"}},
		Labels:     []string{"secret", "untrusted"},
		History:    []engine.HistoryStep{{StepID: "step-1", Namespace: "ns", AgentName: "a", Capability: "read_secret", Status: "succeeded", Labels: []string{"secret"}}},
		Reported:   3,
		PhaseFlows: []engine.PhaseFlow{{Start: 0, Reported: 0}, {Start: 1, Reported: 3, Labels: []string{"secret"}}},
		Runs:       map[string]*engine.StepRun{"step-1": {Status: engine.RunSucceeded, Attempts: 1, Labels: []string{"secret"}}},
	}
}

// flowRoundTrips checks that a state's information flow is stored whole.
func flowRoundTrips(t *testing.T, s engine.StateStore) {
	ctx := context.Background()
	in := flowState("req-flow")
	if err := s.PutRequest(ctx, in, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.GetRequest(ctx, "req-flow")
	if err != nil || !ok {
		t.Fatalf("GetRequest = %v, %v", ok, err)
	}
	if !slices.Equal(got.Labels, in.Labels) || !slices.EqualFunc(got.History, in.History, sameStep) || got.Reported != 3 ||
		len(got.PhaseFlows) != 2 || got.PhaseFlows[1].Reported != 3 || !slices.Equal(got.PhaseFlows[1].Labels, []string{"secret"}) ||
		!slices.Equal(got.Runs["step-1"].Labels, []string{"secret"}) {
		t.Fatalf("GetRequest = labels %v, history %+v, reported %d, phase flows %+v, runs %+v", got.Labels, got.History, got.Reported, got.PhaseFlows, got.Runs)
	}
}

func sameStep(a, b engine.HistoryStep) bool {
	return a.StepID == b.StepID && a.Namespace == b.Namespace && a.AgentName == b.AgentName && a.Capability == b.Capability &&
		a.Status == b.Status && slices.Equal(a.Labels, b.Labels)
}

// secretLabels labels the result of lookup_ticket secret.
type secretLabels struct{}

func (secretLabels) Labels(_ context.Context, call *op.Call, _ any) []string {
	if call.Capability == "lookup_ticket" {
		return []string{"secret"}
	}
	return nil
}

// flowAcrossReplicas: a result one replica's driver labels is seen by the guards of
// another replica's driver on the same backend, in a later phase.
func flowAcrossReplicas(t *testing.T, a, b Stores) {
	ctx := context.Background()
	var seen []string
	guard := func(_ context.Context, c op.Call) error {
		if c.Flow != nil {
			seen = append(seen, c.StepID+":"+strings.Join(c.Flow.Labels, ","))
		}
		return nil
	}
	first, second := flowDriver(t, a, guard), flowDriver(t, b, guard)
	s, err := first.Open(ctx, "req-flow", engine.Opening{Text: "look up"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p1", Terminal: new(bool), Steps: []engine.RoutingStep{ticketStep("step-1", "lookup_ticket", map[string]any{"ticket": "T-1"})}}, 1); err != nil {
		t.Fatal(err)
	}
	if got := verdict(t, first, ticketCall("req-flow", "step-1", "lookup_ticket", map[string]any{"ticket": "T-1"})); got != "allowed" {
		t.Fatal(got)
	}
	if err := first.Finish(ctx, engine.Finish{RequestID: "req-flow", StepID: "step-1", Status: engine.RunSucceeded, Response: map[string]any{"data": "x"}}); err != nil {
		t.Fatal(err)
	}
	s, err = second.Resume(ctx, engine.StageAfterPlanning, "req-flow", engine.Opening{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p2", Steps: []engine.RoutingStep{ticketStep("step-2", "lookup_ticket", map[string]any{"ticket": "T-2"})}}, 2); err != nil {
		t.Fatal(err)
	}
	if got := verdict(t, second, ticketCall("req-flow", "step-2", "lookup_ticket", map[string]any{"ticket": "T-2"})); got != "allowed" {
		t.Fatal(got)
	}
	if want := []string{"step-1:", "step-2:secret"}; !slices.Equal(seen, want) {
		t.Fatalf("the guards saw %v, want %v", seen, want)
	}
}

// flowDriver is bindingDriver with secretLabels and guard on every tool_call.
func flowDriver(t *testing.T, s Stores, guard op.GuardFunc) *engine.Driver {
	t.Helper()
	runner, err := op.Compile(op.Set{PolicyRevision: "r", Guards: []op.Guard{{Name: "see", Operations: []op.Operation{op.ToolCall}, Check: guard}}})
	if err != nil {
		t.Fatal(err)
	}
	gen := &engine.Generation{ID: "g-flow", Pipeline: bindingPipeline(t), Runner: runner, Labels: secretLabels{}}
	d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: gen}, States: s, Records: s})
	if err != nil {
		t.Fatal(err)
	}
	return d
}
