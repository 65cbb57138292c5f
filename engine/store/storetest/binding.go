package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// Stores is what the request driver keeps of requests: their states and records.
type Stores interface {
	engine.StateStore
	engine.RecordStore
}

// refundsForbidden is the required review of the binding suite: every capability but
// refund_order is allowed.
type refundsForbidden struct{}

func (refundsForbidden) Name() string                 { return "allowed-operations" }
func (refundsForbidden) RequireAfterPlanningSuccess() {}
func (refundsForbidden) AfterPlanning(_ context.Context, _ *engine.PipelineContext, p *engine.RoutingPlan) (*engine.RoutingPlan, error) {
	for _, s := range p.Steps {
		if s.Capability() == "refund_order" {
			return nil, fmt.Errorf("step %s: refund_order is not allowed", s.StepID)
		}
	}
	return p, nil
}

func bindingDriver(t *testing.T, s Stores) *engine.Driver {
	t.Helper()
	d, err := engine.NewDriver(engine.DriverConfig{
		Generations: engine.Fixed{Gen: &engine.Generation{ID: "g-binding", Pipeline: bindingPipeline(t)}}, States: s, Records: s,
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// bindingPipeline is the pipeline of the binding suite: its catalog and required review.
func bindingPipeline(t *testing.T) *engine.Pipeline {
	t.Helper()
	catalog, err := engine.NewCatalog([]engine.CatalogAgent{
		{Namespace: "support", Agent: "helpdesk", Capabilities: []engine.Capability{{Name: "lookup_ticket", Returns: []string{"parent"}}, {Name: "refund_order"}}},
		{Namespace: "support", Agent: "billing", Capabilities: []engine.Capability{{Name: "lookup_ticket"}, {Name: "refund_order"}}},
		{Namespace: "sales", Agent: "helpdesk", Capabilities: []engine.Capability{{Name: "lookup_ticket"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.New([]engine.Hook{refundsForbidden{}}, engine.WithCatalog(catalog))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ticketStep(id, capability string, params map[string]any, deps ...string) engine.RoutingStep {
	return engine.RoutingStep{
		StepID: id, Namespace: "support", AgentName: "helpdesk", Instruction: capability, DependsOn: deps,
		Metadata: map[string]any{"capability": capability, "parameters": params},
	}
}

func ticketCall(request, step, capability string, params map[string]any) op.Call {
	return op.Call{Operation: op.ToolCall, RequestID: request, StepID: step, Namespace: "support",
		AgentName: "helpdesk", Capability: capability, Parameters: params}
}

// plan opens request id on d and runs its one plan phase; it fails the test unless the
// review's verdict is want (nil: accepted).
func plan(t *testing.T, d *engine.Driver, id string, wantRejected bool, steps ...engine.RoutingStep) {
	t.Helper()
	ctx := context.Background()
	s, err := d.Open(ctx, id, engine.Opening{Text: "help with my order"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeforePlanning(ctx); err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 {
		return
	}
	s, err = d.Resume(ctx, engine.StageAfterPlanning, id, engine.Opening{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p-" + id, Steps: steps}, 0)
	if _, rejected := engine.AsRequiredAfterPlanningError(err); rejected != wantRejected || (err != nil && !rejected) {
		t.Fatalf("plan of %s: err = %v, want rejected %v", id, err, wantRejected)
	}
}

// verdict is what a check answered: "allowed", a binding or guard denial code, or a
// refusal code.
func verdict(t *testing.T, d *engine.Driver, call op.Call) string {
	t.Helper()
	res, err := d.Check(context.Background(), call)
	if r, ok := engine.AsRefusal(err); ok {
		return string(r.Code)
	}
	if err != nil {
		t.Fatalf("check %+v: %v", call, err)
	}
	if res.Allowed {
		return "allowed"
	}
	return res.Denial.Code
}

// Binding checks plan binding (strict, the default) on stores made by newPair, which
// returns two handles on one backend: one driver accepts plans through the first, a
// second driver (another replica) checks calls through the second. No call outside an
// accepted plan is allowed, a step runs once, and of concurrent checks of one step
// exactly one is allowed.
func Binding(t *testing.T, newPair func(t *testing.T) (Stores, Stores)) {
	ctx := context.Background()
	a, b := newPair(t)
	planner, checker := bindingDriver(t, a), bindingDriver(t, b)
	params := map[string]any{"ticket": "T-1", "fields": []any{"status", "owner"}}
	plan(t, planner, "req-1", false,
		ticketStep("step-1", "lookup_ticket", params),
		ticketStep("step-2", "lookup_ticket", map[string]any{"ticket": "{{step-1.response.data.parent}}"}, "step-1"),
		ticketStep("step-3", "lookup_ticket", map[string]any{"ticket": "T-3"}),
		ticketStep("step-4", "lookup_ticket", map[string]any{"ticket": "T-4"}))
	plan(t, planner, "req-other", false, ticketStep("step-7", "lookup_ticket", map[string]any{"ticket": "T-7"}))
	plan(t, planner, "req-rejected", true, ticketStep("step-1", "refund_order", map[string]any{"order": "O-1"}))
	plan(t, planner, "req-no-plan", false)

	t.Run("LabelsFollowTheRequestAcrossReplicas", func(t *testing.T) { flowAcrossReplicas(t, a, b) })

	t.Run("MismatchedCallsAreDenied", func(t *testing.T) {
		other := func(f func(c *op.Call)) op.Call {
			c := ticketCall("req-1", "step-1", "lookup_ticket", map[string]any{"ticket": "T-1", "fields": []any{"status", "owner"}})
			f(&c)
			return c
		}
		for _, tc := range []struct {
			name string
			call op.Call
			want string
		}{
			{"other capability under the step's id", other(func(c *op.Call) { c.Capability = "refund_order" }), engine.CodePlanMismatch},
			{"other agent", other(func(c *op.Call) { c.AgentName = "billing" }), engine.CodePlanMismatch},
			{"other namespace", other(func(c *op.Call) { c.Namespace = "sales" }), engine.CodePlanMismatch},
			{"agent in another letter case", other(func(c *op.Call) { c.AgentName = "Helpdesk" }), engine.CodePlanMismatch},
			{"unknown step id", other(func(c *op.Call) { c.StepID = "step-99" }), engine.CodeNotInAcceptedPlan},
			{"changed literal parameter", other(func(c *op.Call) { c.Parameters["ticket"] = "T-2" }), engine.CodePlanMismatch},
			{"number for a string parameter", other(func(c *op.Call) { c.Parameters["ticket"] = 1 }), engine.CodePlanMismatch},
			{"reordered list parameter", other(func(c *op.Call) { c.Parameters["fields"] = []any{"owner", "status"} }), engine.CodePlanMismatch},
			{"extra parameter", other(func(c *op.Call) { c.Parameters["refund"] = true }), engine.CodePlanMismatch},
			{"missing parameter", other(func(c *op.Call) { delete(c.Parameters, "fields") }), engine.CodePlanMismatch},
			{"no parameters", other(func(c *op.Call) { c.Parameters = nil }), engine.CodePlanMismatch},
			{"request without a plan", ticketCall("req-no-plan", "step-1", "lookup_ticket", params), engine.CodeNotInAcceptedPlan},
			{"unknown request", ticketCall("req-unknown", "step-1", "lookup_ticket", params), engine.CodeNotInAcceptedPlan},
			{"step of a rejected phase", ticketCall("req-rejected", "step-1", "refund_order", map[string]any{"order": "O-1"}), string(engine.RefusedRequestFailed)},
			{"step of another request", ticketCall("req-1", "step-7", "lookup_ticket", map[string]any{"ticket": "T-7"}), engine.CodeNotInAcceptedPlan},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if got := verdict(t, checker, tc.call); got != tc.want {
					t.Fatalf("verdict = %s, want %s", got, tc.want)
				}
			})
		}
	})

	t.Run("AStepRunsOnceUnlessItsFailureIsRetryable", func(t *testing.T) {
		call := ticketCall("req-1", "step-1", "lookup_ticket", map[string]any{"fields": []any{"status", "owner"}, "ticket": "T-1"})
		finish := func(status engine.RunStatus, retryable bool) {
			t.Helper()
			if err := planner.Finish(ctx, engine.Finish{RequestID: "req-1", StepID: "step-1", Status: status, Retryable: retryable,
				Response: map[string]any{"data": map[string]any{"parent": "T-9"}}}); err != nil {
				t.Fatal(err)
			}
		}
		for i, step := range []struct {
			before func()
			want   string
		}{
			{nil, "allowed"},
			{nil, engine.CodeStepAlreadyExecuted},
			{func() { finish(engine.RunFailed, true) }, "allowed"},
			{func() { finish(engine.RunFailed, false) }, engine.CodeStepAlreadyExecuted},
		} {
			if step.before != nil {
				step.before()
			}
			if got := verdict(t, checker, call); got != step.want {
				t.Fatalf("check %d = %s, want %s", i+1, got, step.want)
			}
		}
		var fe *engine.FinishError
		if err := planner.Finish(ctx, engine.Finish{RequestID: "req-1", StepID: "step-1", Status: engine.RunSucceeded}); !errors.As(err, &fe) || fe.Code != engine.FinishNotStarted {
			t.Fatalf("finish of a finished step: err = %v, want not_started", err)
		}
	})

	t.Run("ReferencesBindToTheReportedResponse", func(t *testing.T) {
		if err := planner.Finish(ctx, engine.Finish{RequestID: "req-1", StepID: "step-3", Status: engine.RunSucceeded}); err == nil {
			t.Fatal("finish of a step that was never checked was taken")
		}
		plan(t, planner, "req-ref", false,
			ticketStep("step-1", "lookup_ticket", map[string]any{"ticket": "T-1"}),
			ticketStep("step-2", "lookup_ticket", map[string]any{"ticket": "{{step-1.response.data.parent}}", "note": "child of {{step-1.response.data.parent}}"}, "step-1"))
		step2 := func(ticket, note string) op.Call {
			return ticketCall("req-ref", "step-2", "lookup_ticket", map[string]any{"ticket": ticket, "note": note})
		}
		if got := verdict(t, checker, ticketCall("req-ref", "step-1", "lookup_ticket", map[string]any{"ticket": "T-1"})); got != "allowed" {
			t.Fatalf("step-1 = %s", got)
		}
		if err := planner.Finish(ctx, engine.Finish{RequestID: "req-ref", StepID: "step-1", Status: engine.RunSucceeded,
			Response: map[string]any{"data": map[string]any{"parent": "T-9"}}}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			call op.Call
			want string
		}{
			{step2("T-8", "child of T-9"), engine.CodePlanMismatch},
			{step2("T-9", "child of T-8"), engine.CodePlanMismatch},
			{step2("T-9", "child of T-9"), "allowed"},
		} {
			if got := verdict(t, checker, tc.call); got != tc.want {
				t.Fatalf("step-2 %v = %s, want %s", tc.call.Parameters, got, tc.want)
			}
		}
	})

	t.Run("ConcurrentChecksOfOneStepAllowOne", func(t *testing.T) {
		const checks = 12
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		for i := range checks {
			d := planner
			if i%2 == 1 {
				d = checker
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := d.Check(ctx, ticketCall("req-1", "step-4", "lookup_ticket", map[string]any{"ticket": "T-4"}))
				v := "allowed"
				switch {
				case err != nil:
					v = err.Error()
				case !res.Allowed:
					v = res.Denial.Code
				}
				mu.Lock()
				got[v]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if got["allowed"] != 1 || got[engine.CodeStepAlreadyExecuted] != checks-1 {
			t.Fatalf("verdicts of %d concurrent checks of one step = %v, want 1 allowed", checks, got)
		}
	})

	t.Run("TheRecordShowsEveryDenial", func(t *testing.T) {
		rec, err := b.Get(ctx, "req-1")
		if err != nil {
			t.Fatal(err)
		}
		codes := map[string]int{}
		for _, o := range rec.Operations {
			if o.Outcome == engine.CheckDeny && o.Guard == engine.BindingGuard {
				codes[o.Code]++
			}
		}
		if codes[engine.CodePlanMismatch] < 8 || codes[engine.CodeNotInAcceptedPlan] < 2 || codes[engine.CodeStepAlreadyExecuted] < 2 {
			t.Fatalf("binding denials in the record = %v", codes)
		}
	})
}
