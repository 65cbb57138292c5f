package hooktest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/decl"
	"github.com/agentd-dev/agentd/engine/op"
)

// checker collects the readable differences between a case's expectations and what
// happened.
type checker struct{ failures []string }

func (c *checker) failf(format string, args ...any) {
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

// equal compares two values as JSON, so YAML-decoded expectations and Go values of
// different static types compare by content.
func (c *checker) equal(what string, want, got any) {
	w, g := canonical(want), canonical(got)
	if w != g {
		c.failf("%s:\n  want %s\n  got  %s", what, w, g)
	}
}

func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	var x any
	if json.Unmarshal(b, &x) == nil {
		b, _ = json.Marshal(x)
	}
	return string(b)
}

// runCase runs one case and returns its failures; a panic is a failure, not a crash.
func runCase(ctx context.Context, gen *decl.Generation, tc decl.TestCase) (failures []string) {
	c := &checker{}
	defer func() {
		if r := recover(); r != nil {
			failures = append(c.failures, fmt.Sprintf("panic: %v", r))
		}
	}()
	g := tc.Given
	gate := engine.NewGate(g.CacheVary, g.CacheReadDisabled)
	ctx = engine.WithRequestInfo(ctx, engine.RequestInfo{ID: "test:" + tc.Name, Generation: gen.ID, Gate: gate})
	pctx := &engine.PipelineContext{Request: g.Request, Metadata: g.Metadata, Enrichments: maps.Clone(g.Enrichments)}
	if pctx.Enrichments == nil {
		pctx.Enrichments = map[string]any{}
	}
	trail := engine.NewTrail()
	switch engine.Stage(tc.Stage) {
	case engine.StageBeforePlanning:
		sc, err := gen.Pipeline.BeforePlanning(ctx, pctx, gate, trail)
		if err != nil {
			c.failf("before_planning failed: %v", err)
		}
		checkShortCircuit(c, tc.Expect.ShortCircuit, sc)
	case engine.StageAfterPlanning:
		checkPlan(ctx, c, gen, tc, pctx, trail)
	case engine.StageAfterExecution:
		gen.Pipeline.AfterExecution(ctx, pctx, g.Result, trail)
	case engine.StageAfterSynthesis:
		got := gen.Pipeline.AfterSynthesis(ctx, pctx, g.Response, trail)
		if want := tc.Expect.Response; want != nil {
			c.equal("response", *want, got)
		}
	case "operation":
		checkOperation(ctx, c, gen, tc)
	}
	for _, k := range slices.Sorted(maps.Keys(tc.Expect.Enrichments)) {
		c.equal("enrichments."+k, tc.Expect.Enrichments[k], pctx.Enrichments[k])
	}
	checkInvocations(c, tc.Expect.Invocations, trail.Invocations())
	return c.failures
}

func checkShortCircuit(c *checker, want json.RawMessage, got *engine.ShortCircuitOutcome) {
	if want == nil {
		return
	}
	if string(want) == "null" {
		if got != nil {
			c.failf("short_circuit:\n  want none\n  got  %s from hook %q", canonical(got.ShortCircuit), got.Hook)
		}
		return
	}
	if got == nil {
		c.failf("short_circuit:\n  want %s\n  got  none", want)
		return
	}
	var w struct{ Response, Source, Kind *string }
	_ = json.Unmarshal(want, &w)
	if w.Response != nil {
		c.equal("short_circuit.response", *w.Response, got.ShortCircuit.Response)
	}
	if w.Source != nil {
		c.equal("short_circuit.source", *w.Source, got.ShortCircuit.Source)
	}
	if w.Kind != nil {
		c.equal("short_circuit.kind", *w.Kind, got.Kind)
	}
}

// checkPlan validates the incoming plan as the daemon does, runs after_planning and
// compares the verdict, the violation codes and the remaining steps.
func checkPlan(ctx context.Context, c *checker, gen *decl.Generation, tc decl.TestCase, pctx *engine.PipelineContext, trail *engine.Trail) {
	plan := tc.Given.Plan
	if plan == nil {
		c.failf("given.plan is required for after_planning")
		return
	}
	if tc.Given.Phase > 0 {
		plan.PhaseNumber = tc.Given.Phase
	}
	out, err := (*engine.RoutingPlan)(nil), engine.ValidatePlan(plan, gen.Catalog, tc.Given.PriorSteps)
	if err == nil {
		out, err = gen.Pipeline.AfterPlanning(ctx, pctx, plan, tc.Given.PriorSteps, trail)
	}
	verdict, codes := "allowed", []string{}
	if err != nil {
		verdict = "rejected"
		if r, ok := builtin.AsPlanRejection(err); ok {
			for _, v := range r.Violations {
				codes = append(codes, v.Code)
			}
		}
	}
	if want := tc.Expect.Plan; want != "" && want != verdict {
		c.failf("plan:\n  want %s\n  got  %s (%v)", want, verdict, err)
	}
	if tc.Expect.Violations != nil {
		c.equal("violations", tc.Expect.Violations, codes)
	}
	if tc.Expect.PlanSteps != nil {
		ids := []string{}
		if out != nil {
			for _, s := range out.Steps {
				ids = append(ids, s.StepID)
			}
		}
		c.equal("plan_steps", tc.Expect.PlanSteps, ids)
	}
}

func checkOperation(ctx context.Context, c *checker, gen *decl.Generation, tc decl.TestCase) {
	var call op.Call
	b, _ := json.Marshal(tc.Given.Call)
	if err := json.Unmarshal(b, &call); err != nil {
		c.failf("given.call: %v", err)
		return
	}
	if tc.Given.Operation != "" {
		call.Operation = op.Operation(tc.Given.Operation)
	}
	if call.RequestID == "" {
		call.RequestID = "test:" + tc.Name
	}
	_, finish, err := gen.Runner.Start(ctx, call)
	if finish != nil {
		finish(op.Result{Call: call, Outcome: op.Completed, Err: err})
	}
	if want := tc.Expect.Allowed; want != nil && *want != (err == nil) {
		c.failf("allowed:\n  want %v\n  got  %v (%v)", *want, err == nil, err)
	}
	if want := tc.Expect.Denial; want != nil {
		d, ok := op.AsDenial(err)
		if !ok {
			c.failf("denial:\n  want %s\n  got  %v", canonical(want), err)
			return
		}
		if want.Code != "" {
			c.equal("denial.code", want.Code, d.Code)
		}
		if want.Reason != "" {
			c.equal("denial.reason", want.Reason, d.Reason)
		}
	}
}

// checkInvocations finds each expected invocation by hook name and compares its status
// and decision reason.
func checkInvocations(c *checker, want []decl.ExpectedHookCall, got []engine.Invocation) {
	for _, w := range want {
		i := slices.IndexFunc(got, func(inv engine.Invocation) bool { return inv.HookName == w.Hook })
		if i < 0 {
			c.failf("invocation of hook %q: not found", w.Hook)
			continue
		}
		inv := got[i]
		if w.Status != "" {
			c.equal("invocation "+w.Hook+" status", w.Status, inv.Status)
		}
		if w.Reason != "" {
			reason := ""
			if inv.Decision != nil {
				reason = inv.Decision.Reason
			}
			c.equal("invocation "+w.Hook+" reason", w.Reason, reason)
		}
	}
}
