package hooktest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// checker collects the readable differences between a case's expectations and what
// happened.
type checker struct{ failures, notes []string }

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

// runner runs the cases of one directory through the request driver, as the daemon
// runs stage calls.
type runner struct {
	driver *engine.Driver
	states engine.StateStore
	gen    *config.Generation
}

// runCase runs one case and returns its failures and notes (see skippedEffects); a
// panic is a failure, not a crash.
func (r *runner) runCase(ctx context.Context, tc config.TestCase) (failures, notes []string) {
	c := &checker{}
	defer func() {
		if v := recover(); v != nil {
			failures, notes = append(c.failures, fmt.Sprintf("panic: %v", v)), c.notes
		}
	}()
	failures = r.checkCase(ctx, c, tc)
	return failures, c.notes
}

// skippedEffects notes every effect the case's invocations reported as skipped, with
// why (a cache.store that stored nothing, say, because no plan was accepted): what a
// later case that expects its outcome needs to know.
func skippedEffects(c *checker, invocations []engine.Invocation) {
	for _, inv := range invocations {
		for _, e := range inv.Effects {
			if e.Status == engine.EffectSkipped {
				c.notes = append(c.notes, fmt.Sprintf("hook %q: %s skipped: %s", inv.HookName, e.Name, e.Summary))
			}
		}
	}
}

// checkCase runs one case and returns its failures.
func (r *runner) checkCase(ctx context.Context, c *checker, tc config.TestCase) []string {
	if tc.Stage == "operation" {
		r.checkOperation(ctx, c, tc)
		return c.failures
	}
	sess, err := r.session(ctx, tc)
	if err != nil {
		c.failf("%s: %v", tc.Stage, err)
		return c.failures
	}
	var invocations []engine.Invocation
	switch engine.Stage(tc.Stage) {
	case engine.StageBeforePlanning:
		out, err := sess.BeforePlanning(ctx)
		if err != nil {
			c.failf("before_planning failed: %v", err)
			break
		}
		invocations = out.Invocations
		checkShortCircuit(c, tc.Expect.ShortCircuit, out.ShortCircuit)
	case engine.StageAfterPlanning:
		invocations = r.checkPlan(ctx, c, sess, tc)
	case engine.StageAfterExecution:
		if tc.Given.Result == nil {
			c.failf("given.result is required for after_execution")
			break
		}
		out, err := sess.AfterExecution(ctx, tc.Given.Result)
		if err != nil {
			c.failf("after_execution failed: %v", err)
			break
		}
		invocations = out.Invocations
	case engine.StageAfterSynthesis:
		out, err := sess.AfterSynthesis(ctx, tc.Given.Response)
		if err != nil {
			c.failf("after_synthesis failed: %v", err)
			break
		}
		invocations = out.Invocations
		if want := tc.Expect.Response; want != nil {
			c.equal("response", *want, out.Response)
		}
	}
	enrichments := sess.Context().Enrichments
	for _, k := range slices.Sorted(maps.Keys(tc.Expect.Enrichments)) {
		c.equal("enrichments."+k, tc.Expect.Enrichments[k], enrichments[k])
	}
	checkInvocations(c, tc.Expect.Invocations, invocations)
	skippedEffects(c, invocations)
	return c.failures
}

// session opens the case's request: afresh for before_planning and for a case of its
// own, else continuing the request an earlier case with the same request_id left. A
// case of its own starts from given: its request, metadata and enrichments, and the
// steps of completed earlier phases. Either starts from given's history and labels
// (what the request reported before the case).
func (r *runner) session(ctx context.Context, tc config.TestCase) (*engine.Session, error) {
	g := tc.Given
	opening := engine.Opening{
		Text: g.Request, Metadata: g.Metadata, Enrichments: g.Enrichments,
		CacheVary: g.CacheVary, CacheReadDisabled: g.CacheReadDisabled,
	}
	stage := engine.Stage(tc.Stage)
	if g.RequestID != "" {
		if stage == engine.StageBeforePlanning {
			sess, err := r.driver.Open(ctx, g.RequestID, opening)
			if err == nil {
				err = r.startFrom(ctx, g) // for later cases: before_planning reads no flow
			}
			return sess, err
		}
		if err := r.startFrom(ctx, g); err != nil {
			return nil, err
		}
		return r.driver.Resume(ctx, stage, g.RequestID, opening)
	}
	id := caseID(tc)
	if stage == engine.StageBeforePlanning {
		return r.driver.Open(ctx, id, opening)
	}
	st, err := r.caseState(id, g)
	if err != nil {
		return nil, err
	}
	if err := r.states.PutRequest(ctx, st, 0); err != nil {
		return nil, err
	}
	return r.driver.Resume(ctx, stage, id, opening)
}

// caseState is the state a case starts request id from when no earlier case opened it:
// given's request, metadata, enrichments, the steps of completed earlier phases, and
// its history and labels.
func (r *runner) caseState(id string, g config.TestGiven) (*engine.RequestState, error) {
	st := &engine.RequestState{
		ID: id, Generation: r.gen.ID, Request: g.Request, Metadata: g.Metadata, Enrichments: maps.Clone(g.Enrichments),
		CacheVary: g.CacheVary, CacheReadDisabled: g.CacheReadDisabled, Lifecycle: engine.LifecycleOpen,
		PriorSteps: g.PriorSteps,
	}
	if g.Phase > 1 {
		st.Phase = g.Phase - 1
	}
	if err := st.StartFrom(g.History, g.Labels); err != nil {
		return nil, fmt.Errorf("given.history: %w", err)
	}
	return st, nil
}

// startFrom gives the request given.request_id the history and labels of given, when
// it states any: added to an open request's, or starting one no earlier case opened.
func (r *runner) startFrom(ctx context.Context, g config.TestGiven) error {
	if len(g.History) == 0 && len(g.Labels) == 0 {
		return nil
	}
	st, ok, err := r.states.GetRequest(ctx, g.RequestID)
	switch {
	case err != nil:
		return err
	case !ok:
		st, err = r.caseState(g.RequestID, g)
	default:
		if err = st.StartFrom(g.History, g.Labels); err != nil {
			err = fmt.Errorf("given.history: %w", err)
		}
	}
	if err != nil {
		return err
	}
	st.Revision++
	return r.states.PutRequest(ctx, st, 0)
}

// caseID is the request id of a case of its own: unique per case, so that no two cases
// share a request by accident.
func caseID(tc config.TestCase) string {
	return fmt.Sprintf("test:%s:%d", tc.File, tc.Line)
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

// checkPlan runs the case's plan through after_planning as the daemon does (the
// incoming plan validated first) and compares the verdict, the violation codes and the
// remaining steps.
func (r *runner) checkPlan(ctx context.Context, c *checker, sess *engine.Session, tc config.TestCase) []engine.Invocation {
	if tc.Given.Plan == nil {
		c.failf("given.plan is required for after_planning")
		return nil
	}
	out, err := sess.AfterPlanning(ctx, tc.Given.Plan, tc.Given.Phase)
	verdict, codes := "allowed", []string{}
	if err != nil {
		verdict = "rejected"
		for _, v := range engine.ViolationsOf(err) {
			codes = append(codes, v.Code)
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
			for _, s := range out.Plan.Steps {
				ids = append(ids, s.StepID)
			}
		}
		c.equal("plan_steps", tc.Expect.PlanSteps, ids)
	}
	if out != nil {
		return out.Invocations
	}
	return r.invocationsOf(ctx, sess, engine.StageAfterPlanning)
}

// invocationsOf returns the stage's invocations of the last phase from the request's
// record: a rejected phase returns none of its own.
func (r *runner) invocationsOf(ctx context.Context, sess *engine.Session, stage engine.Stage) []engine.Invocation {
	rec, err := sess.Record(ctx)
	if err != nil {
		return nil
	}
	var out []engine.Invocation
	for _, inv := range rec.PipelineHooks {
		if inv.Phase == stage {
			if inv.Sequence == 1 {
				out = out[:0]
			}
			out = append(out, inv)
		}
	}
	return out
}

func (r *runner) checkOperation(ctx context.Context, c *checker, tc config.TestCase) {
	var call op.Call
	b, _ := json.Marshal(tc.Given.Call)
	if err := json.Unmarshal(b, &call); err != nil {
		c.failf("given.call: %v", err)
		return
	}
	if tc.Given.Operation != "" {
		call.Operation = op.Operation(tc.Given.Operation)
	}
	switch {
	case tc.Given.RequestID != "":
		call.RequestID = tc.Given.RequestID
		if err := r.startFrom(ctx, tc.Given); err != nil {
			c.failf("%v", err)
			return
		}
	case call.RequestID == "":
		call.RequestID = caseID(tc)
	}
	// A call on a request the driver does not know carries given's request and
	// metadata, what the guards see; a known request's own replace them.
	if call.Request == "" {
		call.Request = tc.Given.Request
	}
	if call.Metadata == nil {
		call.Metadata = tc.Given.Metadata
	}
	out, err := r.driver.Check(ctx, call)
	allowed := err == nil && out.Allowed
	var verdict error = err
	if err == nil && out.Denial != nil {
		verdict = out.Denial
	}
	if want := tc.Expect.Allowed; want != nil && *want != allowed {
		c.failf("allowed:\n  want %v\n  got  %v (%v)", *want, allowed, verdict)
	}
	if want := tc.Expect.Denial; want != nil {
		d, ok := op.AsDenial(verdict)
		if !ok {
			c.failf("denial:\n  want %s\n  got  %v", canonical(want), verdict)
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
func checkInvocations(c *checker, want []config.ExpectedHookCall, got []engine.Invocation) {
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
				reason = string(inv.Decision.Reason)
			}
			c.equal("invocation "+w.Hook+" reason", w.Reason, reason)
		}
	}
}
