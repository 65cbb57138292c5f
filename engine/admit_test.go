package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// admitGeneration is a generation whose catalog offers ns/tools echo, trade and wipe,
// whose required hook rejects a plan with a wipe step and adds a member "Amount" to a
// step whose instruction is "fold", and whose one tool_call guard denies a trade of
// more than 100 and fails (a broken guard) on a trade of a negative amount.
func admitGeneration(t *testing.T) *engine.Generation {
	t.Helper()
	catalog, err := engine.NewCatalog([]engine.CatalogAgent{{Namespace: "ns", Agent: "tools",
		Capabilities: []engine.Capability{{Name: "echo"}, {Name: "trade"}, {Name: "wipe"}}}})
	if err != nil {
		t.Fatal(err)
	}
	review := &requiredHook{planHook{name: "review", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		for i, st := range plan.Steps {
			switch {
			case st.Capability() == "wipe":
				return nil, errors.New("wipe is not allowed")
			case st.Instruction == "fold":
				plan.Steps[i].Metadata["parameters"].(map[string]any)["Amount"] = 50000.0
			case st.Instruction == "scalar":
				plan.Steps[i].Metadata["parameters"] = "not an object"
			}
		}
		return plan, nil
	}}}
	p, err := engine.New([]engine.Hook{review}, engine.WithCatalog(catalog))
	if err != nil {
		t.Fatal(err)
	}
	runner, err := op.Compile(op.Set{PolicyRevision: "rev", Guards: []op.Guard{{Name: "limit", Operations: []op.Operation{op.ToolCall},
		Check: func(_ context.Context, c op.Call) error {
			amount, _ := c.Parameters["amount"].(float64)
			switch {
			case amount < 0:
				return errors.New("the limit service is down")
			case amount > 100:
				return op.Deny("trade_limit", "trades above 100 need approval")
			}
			return nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Generation{ID: "gen-admit", Pipeline: p, Runner: runner, Binding: engine.BindingStrict}
}

func admitStep(id, capability, instruction string, params map[string]any) engine.RoutingStep {
	return engine.RoutingStep{StepID: id, Namespace: "ns", AgentName: "tools", Instruction: instruction,
		Metadata: map[string]any{"capability": capability, "parameters": params}}
}

// Session.Admit reviews a round as the phase's plan and checks each accepted step: the
// allowed ones come back with their canonical arguments, the others with why, and a
// rejected round is the stage's error with nothing checked.
func TestSession_Admit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		steps       []engine.RoutingStep
		wantErr     string // "required", "plan" or ""
		wantAllowed map[string]string
		wantDenied  map[string]string // step id -> denial code
	}{
		{
			name: "allowed, denied and a broken guard",
			steps: []engine.RoutingStep{
				admitStep("step-1", "trade", "buy", map[string]any{"symbol": "ACME", "amount": 5.0, "note": "<&>"}),
				admitStep("step-2", "trade", "buy", map[string]any{"amount": 500.0}),
				admitStep("step-3", "trade", "buy", map[string]any{"amount": -1.0}),
				admitStep("step-4", "echo", "echo", nil),
			},
			wantAllowed: map[string]string{"step-1": `{"amount":5,"note":"\u003c\u0026\u003e","symbol":"ACME"}`, "step-4": `{}`},
			wantDenied:  map[string]string{"step-2": "trade_limit", "step-3": "guard_error"},
		},
		{
			name:       "parameters a reader could take for others",
			steps:      []engine.RoutingStep{admitStep("step-1", "trade", "fold", map[string]any{"amount": 5.0})},
			wantDenied: map[string]string{"step-1": engine.DenialAmbiguousParameters},
		},
		{
			name:       "parameters that are not an object",
			steps:      []engine.RoutingStep{admitStep("step-1", "trade", "scalar", map[string]any{})},
			wantDenied: map[string]string{"step-1": engine.DenialInvalidParameters},
		},
		{
			name:    "the required hook rejects the round",
			steps:   []engine.RoutingStep{admitStep("step-1", "echo", "echo", nil), admitStep("step-2", "wipe", "wipe", nil)},
			wantErr: "required",
		},
		{
			name:    "an invalid plan",
			steps:   []engine.RoutingStep{admitStep("step-1", "nope", "echo", nil)},
			wantErr: "plan",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, mem := memoryDriver(t, engine.Fixed{Gen: admitGeneration(t)})
			sess, err := d.Open(ctx, "req", engine.Opening{Text: "trade"})
			if err != nil {
				t.Fatal(err)
			}
			a, err := sess.Admit(ctx, &engine.RoutingPlan{PlanID: "p1", Steps: tc.steps}, 1)
			switch tc.wantErr {
			case "required":
				if !isRequiredRejection(err) || a != nil {
					t.Fatalf("Admit = %v, %v; want the required hook's rejection", a, err)
				}
			case "plan":
				if _, ok := engine.AsPlanError(err); !ok || a != nil {
					t.Fatalf("Admit = %v, %v; want a plan error", a, err)
				}
			}
			if tc.wantErr != "" {
				if rec, _ := mem.Get(ctx, "req"); rec != nil && len(rec.Operations) != 0 {
					t.Errorf("a rejected round was checked: %+v", rec.Operations)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			allowed := map[string]string{}
			for _, c := range a.Allowed {
				allowed[c.Step.StepID] = string(c.Arguments)
				if c.Check == nil || !c.Check.Allowed {
					t.Errorf("%s: allowed without an allowing check: %+v", c.Step.StepID, c.Check)
				}
			}
			denied := map[string]string{}
			for _, dc := range a.Denied {
				denied[dc.Step.StepID], _ = dc.Reason()
			}
			if !equalMaps(allowed, tc.wantAllowed) || !equalMaps(denied, tc.wantDenied) {
				t.Errorf("allowed %v, denied %v; want %v and %v", allowed, denied, tc.wantAllowed, tc.wantDenied)
			}
			rec, err := mem.Get(ctx, "req")
			if err != nil {
				t.Fatal(err)
			}
			// Every step is recorded as an operation check, Admit's own denials included
			// (guard AdmissionGuard, their code), so ?violation= and the viewer find them.
			if len(rec.Operations) != len(tc.steps) || len(rec.Phases) != 1 {
				t.Errorf("the record has %d operations and %d phases; want %d and 1", len(rec.Operations), len(rec.Phases), len(tc.steps))
			}
			for _, o := range rec.Operations {
				code := denied[o.StepID]
				if own := code == engine.DenialAmbiguousParameters || code == engine.DenialInvalidParameters; own &&
					(o.Outcome != engine.CheckDeny || o.Code != code || o.Guard != engine.AdmissionGuard) {
					t.Errorf("%s: recorded %+v, want a %s denial by %s", o.StepID, o, code, engine.AdmissionGuard)
				}
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// An invalid plan fails a request opened with InvalidPlanFails, and leaves one opened
// without it open for a corrected plan.
func TestOpening_InvalidPlanFails(t *testing.T) {
	ctx := context.Background()
	for _, fails := range []bool{false, true} {
		d, mem := memoryDriver(t, engine.Fixed{Gen: admitGeneration(t)})
		o := engine.Opening{Text: "trade", InvalidPlanFails: fails}
		phase := func(capability string) error {
			sess, err := d.Resume(ctx, engine.StageAfterPlanning, "req", o)
			if err != nil {
				return err
			}
			_, err = sess.Admit(ctx, &engine.RoutingPlan{PlanID: "p-" + capability, Steps: []engine.RoutingStep{admitStep("step-"+capability, capability, "x", nil)}}, 0)
			return err
		}
		if _, ok := engine.AsPlanError(phase("nope")); !ok {
			t.Fatalf("fails=%v: an unknown capability is no plan error", fails)
		}
		err := phase("echo")
		rec, _ := mem.Get(ctx, "req")
		if fails {
			if r, ok := engine.AsRefusal(err); !ok || r.Code != engine.RefusedRequestFailed || rec.Status != engine.RecordFailed || len(rec.Rejections) != 1 {
				t.Errorf("InvalidPlanFails: the next phase: %v, record %s with %d rejections", err, rec.Status, len(rec.Rejections))
			}
			continue
		}
		if err != nil || rec.Status == engine.RecordFailed {
			t.Errorf("by default the corrected plan: %v, record %s", err, rec.Status)
		}
	}
}

func TestAmbiguousMember(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{map[string]any{"amount": 5, "Amount": 50000}, true},
		{map[string]any{"key": 1, "\u212aey": 2}, true}, // the Kelvin sign folds to k
		{map[string]any{"o": []any{map[string]any{"Σ": 1, "σ": 2}}}, true},
		{map[string]any{"amount": 5, "Symbol": "ACME", "n": map[string]any{"ID": 1}}, false},
		{map[string]any{"ı": 1, "i": 2}, false}, // dotless i folds to itself only
		{nil, false},
	} {
		if _, _, got := engine.AmbiguousMember(tc.v); got != tc.want {
			t.Errorf("AmbiguousMember(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// An operation check of a tool call whose parameters have two names a client may take
// for one is denied before binding and the guards, as Admit denies it: the guard would
// read amount 5 where a client decoding into a struct runs 50000.
func TestDriver_CheckDeniesAmbiguousParameters(t *testing.T) {
	ctx := context.Background()
	d, mem := memoryDriver(t, engine.Fixed{Gen: admitGeneration(t)})
	sess, err := d.Open(ctx, "req", engine.Opening{Text: "trade"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p1", Steps: []engine.RoutingStep{
		admitStep("step-1", "trade", "buy", map[string]any{"amount": 5.0}),
	}}, 1); err != nil {
		t.Fatal(err)
	}
	call := op.Call{Operation: op.ToolCall, RequestID: "req", StepID: "step-1", Namespace: "ns", AgentName: "tools", Capability: "trade"}
	for _, tc := range []struct {
		params map[string]any
		want   string // the denial code, "" for allowed
	}{
		{map[string]any{"amount": 5.0, "Amount": 50000.0}, engine.DenialAmbiguousParameters},
		{map[string]any{"amount": 5.0, "nested": map[string]any{"key": "a", "\u212aey": "b"}}, engine.DenialAmbiguousParameters},
		{map[string]any{"amount": 5.0}, ""},
	} {
		call.Parameters = tc.params
		res, err := d.Check(ctx, call)
		if err != nil {
			t.Fatalf("%v: %v", tc.params, err)
		}
		code := ""
		if res.Denial != nil {
			code = res.Denial.Code
		}
		if res.Allowed != (tc.want == "") || code != tc.want {
			t.Errorf("%v: allowed %v, denial %q; want %q", tc.params, res.Allowed, code, tc.want)
		}
	}
	rec, err := mem.Get(ctx, "req")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Operations); n != 3 || rec.Operations[0].Guard != engine.AdmissionGuard || rec.Operations[0].Code != engine.DenialAmbiguousParameters {
		t.Errorf("recorded %+v, want the two denials by %s, then the allowed call", rec.Operations, engine.AdmissionGuard)
	}
}
