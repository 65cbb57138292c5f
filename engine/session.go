package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Session is one request as the driver runs it: its pinned generation and its state.
// A Session serves the calls of one request in lifecycle order; it is not safe for
// concurrent use. Entry points that serve one call per network request (the HTTP API)
// take a new Session per call with Driver.Resume; the Go Lifecycle keeps one for the
// whole request.
type Session struct {
	d     *Driver
	gen   *Generation
	state *RequestState
	// fresh is set until the first record write: that write replaces any record an
	// earlier request with the same id left.
	fresh bool
	// unknown is set for an operation check of a request the driver does not know: its
	// state is a stand-in that is never written.
	unknown bool
	// mu guards fresh and local: late effect updates write the record from other
	// goroutines.
	mu sync.Mutex
	// local is the record when the driver has no record store.
	local *ExecutionRecord
}

func (d *Driver) newSession(gen *Generation, st *RequestState, fresh bool) *Session {
	return &Session{d: d, gen: gen, state: st, fresh: fresh}
}

// ID returns the request id.
func (s *Session) ID() string { return s.state.ID }

// Generation returns the generation the request runs on.
func (s *Session) Generation() *Generation { return s.gen }

// Context returns the request's pipeline context: its text, metadata and the
// enrichments so far. The maps are the session's own: a planner or synthesizer must
// treat them as read-only.
func (s *Session) Context() *PipelineContext {
	return &PipelineContext{Request: s.state.Request, Metadata: s.state.Metadata, Enrichments: s.state.Enrichments}
}

// stageCall is one stage call in progress.
type stageCall struct {
	id      string // the decision id
	stage   Stage
	ctx     context.Context
	trail   Trail           // the trail and the pipeline context live in the call:
	pctx    PipelineContext // one allocation with it
	started time.Time
	// invocations is the trail's snapshot once the stage ran (see recorded).
	invocations []Invocation
	// The call's input and output, for its report.
	enrichments    map[string]any
	prior          []RoutingStep
	plan, accepted *RoutingPlan
	result         *ExecutionResult
	draft          string
	response       string
	phase          int  // the request's accepted phases as the call began
	failed         bool // whether the request had failed as the call began
	detachedCtx    context.Context
	// span is the call's span, nil when tracing is off or once ended.
	span trace.Span
	// caller is the call's own trace context (none: invalid), and open says the
	// request was open when the call began: a call that ends it emits the request's
	// invoke_agent span (ended).
	caller trace.SpanContext
	open   bool
}

// endSpan ends the call's span if done did not (a call that ended on a store failure).
func (c *stageCall) endSpan() {
	if c.span != nil {
		c.span.End()
		c.span = nil
	}
}

// detached is the call's context without its cancellation, for what is written and
// told even when the caller has gone; made once per call.
func (c *stageCall) detached() context.Context {
	if c.detachedCtx == nil {
		c.detachedCtx = context.WithoutCancel(c.ctx)
	}
	return c.detachedCtx
}

func (s *Session) begin(ctx context.Context, stage Stage) *stageCall {
	st := s.state
	gate := NewGate(st.CacheVary, st.CacheReadDisabled)
	enrichments := st.Enrichments
	if stage == StageBeforePlanning {
		enrichments = maps.Clone(enrichments) // the stage writes the request's own map
	}
	var span trace.Span
	caller := trace.SpanContextFromContext(ctx)
	if stage != "" {
		ctx, span = s.gen.telemetry().startStage(ctx, st, stage)
	}
	return &stageCall{
		id: decisionID(ctx), stage: stage, started: time.Now(), span: span,
		caller: caller, open: st.Lifecycle == LifecycleOpen || st.Lifecycle == "",
		ctx:         WithRequestInfo(ctx, s.info(gate)),
		pctx:        PipelineContext{Request: st.Request, Metadata: st.Metadata, Enrichments: st.Enrichments},
		enrichments: enrichments, prior: st.PriorSteps, phase: st.Phase, failed: st.Lifecycle == LifecycleFailed,
	}
}

// info describes the request to the hooks of a call; WhatIf.info describes it alike
// to an evaluation (TestEvaluate_SeesTheRealPathsContext).
func (s *Session) info(gate Gate) RequestInfo {
	st := s.state
	return RequestInfo{ID: st.ID, Generation: s.gen.ID, Gate: gate, Phase: st.Phase, Failed: st.Lifecycle == LifecycleFailed,
		Flow: &Flow{Labels: st.Labels, History: st.History}}
}

// recorded returns the call's invocations, copied from the trail once: the record, the
// result and the observer share that read-only snapshot.
func (c *stageCall) recorded() []Invocation {
	if c.invocations == nil {
		c.invocations = c.trail.Invocations()
		if c.invocations == nil {
			c.invocations = []Invocation{}
		}
		for i := range c.invocations {
			c.invocations[i].DecisionID = c.id
		}
	}
	return c.invocations
}

// warnings are the call's findings made in warn mode.
func (c *stageCall) warnings() []Finding {
	var out []Finding
	for _, inv := range c.recorded() {
		out = append(out, Warnings(inv.WouldDeny)...)
	}
	return out
}

// done ends the call's span and reports the finished call to the observer.
func (s *Session) done(c *stageCall, outcome CallOutcome, err error) {
	endStage(c.span, outcome, err)
	c.span = nil
	s.ended(c, err)
	s.d.observer.Staged(c.detached(), &StageReport{
		DecisionID: c.id, RequestID: s.state.ID, Generation: s.gen.ID, PolicyRevision: s.gen.PolicyRevision,
		Stage: c.stage, Outcome: outcome, Cause: CauseOf(err), Violations: ViolationsOf(err),
		Started: c.started, Duration: time.Since(c.started), Invocations: c.recorded(),
		Request: c.pctx.Request, Metadata: c.pctx.Metadata, Plan: c.plan, Accepted: c.accepted, Result: c.result,
		Draft: c.draft, Response: c.response, Enrichments: c.enrichments, PriorSteps: c.prior, Phase: c.phase, Failed: c.failed, Err: err,
	})
}

// run runs fn, which runs hooks; a hook panic fails the request's record and is
// re-raised with its original value.
func (s *Session) run(c *stageCall, fn func() error) error {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("pipeline hook panic: %v", r)
			_ = s.commit(c, failed(err))
			s.done(c, OutcomePanic, err)
			panic(r)
		}
	}()
	return fn()
}

// BeforePlanningResult is the outcome of before_planning.
type BeforePlanningResult struct {
	DecisionID string
	// Warnings are what rules in warn mode would have denied.
	Warnings    []Finding
	Enrichments map[string]any
	// ShortCircuit is the accepted short circuit; nil means planning goes on.
	ShortCircuit *ShortCircuitOutcome
	Invocations  []Invocation
}

// BeforePlanning runs before_planning. An accepted short circuit completes the request.
// A decision that breaks the contract (*ContractError) fails it.
func (s *Session) BeforePlanning(ctx context.Context) (*BeforePlanningResult, error) {
	c := s.begin(ctx, StageBeforePlanning)
	defer c.endSpan()
	var out *BeforePlanningResult
	err := s.run(c, func() error {
		gate := NewGate(s.state.CacheVary, s.state.CacheReadDisabled)
		sc, err := s.gen.Pipeline.BeforePlanning(c.ctx, &c.pctx, gate, &c.trail)
		if err != nil {
			_ = s.commit(c, failed(err))
			s.done(c, OutcomeHookContract, err)
			return err
		}
		outcome, ch := OutcomeContinue, change{}
		if sc != nil {
			outcome, ch = OutcomeShortCircuit, completed(sc.ShortCircuit.Response, SourceShortCircuit)
		}
		if err := s.commit(c, ch); err != nil {
			return err
		}
		out = &BeforePlanningResult{DecisionID: c.id, Warnings: c.warnings(), Enrichments: c.pctx.Enrichments, ShortCircuit: sc, Invocations: c.recorded()}
		s.done(c, outcome, nil)
		return nil
	})
	return out, err
}

// PlanResult is the outcome of one after_planning phase.
type PlanResult struct {
	DecisionID string
	// Warnings are what rules in warn mode would have denied.
	Warnings    []Finding
	Plan        *RoutingPlan
	Invocations []Invocation
	// Replayed is set when the call re-sent the last phase's plan and was answered
	// from the record without running the hooks again.
	Replayed bool
}

// AfterPlanning reviews the plan of one phase: phase > 0 sets its number, else the
// plan's own phase_number, else the next phase. The incoming plan is validated first
// (a *PlanError; the request goes on unless it opened with InvalidPlanFails); then
// after_planning runs on it. A rejection by the required hook
// (*RequiredAfterPlanningError) fails the request (unless PhasesIndependent); an
// accepted plan becomes the phase's plan, and its steps the prior steps of later
// phases.
//
// A call that re-sends the last accepted phase's plan (its plan_id and at least one of
// its step ids, with no other phase number) is answered from the record as it was the
// first time, without running the hooks again, and changes nothing (docs/semantics.md
// §8.5, §8.6).
func (s *Session) AfterPlanning(ctx context.Context, plan *RoutingPlan, phase int) (*PlanResult, error) {
	if plan == nil {
		return nil, fmt.Errorf("%w: after_planning needs a plan", ErrInvalidPlan)
	}
	c := s.begin(ctx, StageAfterPlanning)
	defer c.endSpan()
	c.plan = plan
	st := s.state
	hash := planHash(plan)
	if s.resent(plan, phase, hash) {
		if out := s.replayPhase(c.ctx); out != nil {
			out.DecisionID, c.accepted = c.id, out.Plan
			s.done(c, OutcomeReplayed, nil)
			return out, nil
		}
	}
	switch {
	case phase > 0:
		plan.PhaseNumber = phase
	case plan.PhaseNumber == 0:
		plan.PhaseNumber = st.Phase + 1
	}
	planID := plan.PlanID
	reported, labels := st.Reported, st.Labels // what the review sees (RequestInfo.Flow)
	if err := s.gen.Pipeline.ValidatePlan(plan, st.PriorSteps); err != nil {
		if ch := s.rejected(c, plan, err); ch.state != nil { // the request fails with it
			if werr := s.commit(c, ch); werr != nil {
				return nil, werr
			}
		} else if werr := s.writeRecord(c.detached(), ch.record); werr != nil {
			return nil, s.d.refuse(c.ctx, c.stage, st.ID, werr)
		}
		s.done(c, OutcomeInvalidPlan, err)
		return nil, err
	}
	var out *PlanResult
	err := s.run(c, func() error {
		accepted, err := s.gen.Pipeline.AfterPlanning(c.ctx, &c.pctx, plan, st.PriorSteps, &c.trail)
		if err != nil {
			_ = s.commit(c, s.rejected(c, plan, err))
			s.done(c, OutcomeRejected, err)
			return err
		}
		recorded := s.ownPlan(accepted)
		if err := s.commit(c, change{
			state: func(st *RequestState) {
				markPhase(st, len(st.PriorSteps), reported, labels)
				st.PhaseStart, st.PhasePlanID, st.PhaseHash = len(st.PriorSteps), planID, hash
				st.PriorSteps = append(slices.Clip(st.PriorSteps), recorded.Steps...)
				st.Phase = accepted.PhaseNumber
			},
			record: func(rec *ExecutionRecord) {
				rec.Phases = append(rec.Phases, PhaseRecord{Phase: accepted.PhaseNumber, Plan: recorded})
			},
		}); err != nil {
			return err
		}
		c.accepted = accepted
		out = &PlanResult{DecisionID: c.id, Warnings: c.warnings(), Plan: accepted, Invocations: c.recorded()}
		s.done(c, OutcomeAccepted, nil)
		return nil
	})
	return out, err
}

// ownPlan copies a plan for the request's state and record, which share it (and its
// steps) between their stored revisions (CloneState, CopyRecord): the caller of the
// stage keeps the plan it gave or got and may change it, unless the driver keeps plans
// (DriverConfig.KeepPlans). A plan that does not deep-copy (a value that is not
// JSON-shaped) stays shared.
func (s *Session) ownPlan(plan *RoutingPlan) *RoutingPlan {
	if s.d.keepPlans {
		return plan
	}
	if own, err := ClonePlan(plan); err == nil {
		return own
	}
	return plan
}

// resent reports whether plan re-sends the last accepted phase's plan: the same
// plan_id and the same JSON encoding (hash), a step id of that phase (a new phase could
// not reuse one), and no other phase number. A plan that keeps the plan_id and a step
// id but changes anything else is no re-send: it is reviewed as what it is (and a
// repeated step id breaks plan rule 8).
func (s *Session) resent(plan *RoutingPlan, phase int, hash string) bool {
	st := s.state
	if st.Phase == 0 || plan.PlanID == "" || plan.PlanID != st.PhasePlanID || hash == "" || hash != st.PhaseHash ||
		phase != 0 && phase != st.Phase || plan.PhaseNumber != 0 && plan.PhaseNumber != st.Phase {
		return false
	}
	last := st.PriorSteps[min(st.PhaseStart, len(st.PriorSteps)):]
	for _, in := range plan.Steps {
		for _, done := range last {
			if done.StepID == in.StepID {
				return true
			}
		}
	}
	return false
}

// planHash is the SHA-256 of plan's JSON encoding (map keys sorted, so equal plans
// hash equal), hex-encoded; "" when the plan does not encode. AppendJSON writes what
// encoding/json writes, so states stored by earlier versions keep their hashes.
func planHash(plan *RoutingPlan) string {
	buf := hashBuffers.Get().(*[]byte)
	defer hashBuffers.Put(buf)
	data, err := AppendJSON((*buf)[:0], plan)
	*buf = data
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

var hashBuffers = sync.Pool{New: func() any { return new([]byte) }}

// replayPhase answers a re-sent plan with the last phase's accepted plan and review from
// the record, or returns nil when the record no longer has them.
func (s *Session) replayPhase(ctx context.Context) *PlanResult {
	rec, err := s.Record(ctx)
	if err != nil || len(rec.Phases) == 0 || rec.Phases[len(rec.Phases)-1].Phase != s.state.Phase {
		return nil
	}
	phase := rec.Phases[len(rec.Phases)-1]
	invocations := []Invocation{}
	for _, inv := range rec.PipelineHooks {
		if inv.Phase == StageAfterPlanning && inv.PlanPhase == phase.Phase {
			invocations = append(invocations, copyInvocation(inv)) // the record's are shared with the store
		}
	}
	plan, err := ClonePlan(phase.Plan) // the record's plan is shared with the store
	if err != nil {
		return nil
	}
	return &PlanResult{Plan: plan, Invocations: invocations, Replayed: true}
}

// StageResult is the outcome of after_execution.
type StageResult struct {
	DecisionID string
	// Warnings are what rules in warn mode would have denied.
	Warnings    []Finding
	Invocations []Invocation
}

// AfterExecution runs the observe-only after_execution hooks on the combined result and
// records it (see ReportResults).
func (s *Session) AfterExecution(ctx context.Context, result *ExecutionResult) (*StageResult, error) {
	if result == nil {
		return nil, errors.New("engine: after_execution needs a result")
	}
	c := s.begin(ctx, StageAfterExecution)
	defer c.endSpan()
	c.result = result
	var out *StageResult
	err := s.run(c, func() error {
		s.gen.Pipeline.AfterExecution(c.ctx, &c.pctx, result, &c.trail)
		if err := s.commit(c, resultsReported(result)); err != nil {
			return err
		}
		out = &StageResult{DecisionID: c.id, Warnings: c.warnings(), Invocations: c.recorded()}
		s.done(c, OutcomeCompleted, nil)
		return nil
	})
	return out, err
}

// SynthesisResult is the outcome of after_synthesis.
type SynthesisResult struct {
	DecisionID string
	// Warnings are what rules in warn mode would have denied.
	Warnings    []Finding
	Response    string
	Invocations []Invocation
}

// AfterSynthesis runs the chained after_synthesis hooks and completes the request with
// the final response (a request that already failed stays failed).
func (s *Session) AfterSynthesis(ctx context.Context, response string) (*SynthesisResult, error) {
	c := s.begin(ctx, StageAfterSynthesis)
	defer c.endSpan()
	c.draft = response
	var out *SynthesisResult
	err := s.run(c, func() error {
		final := s.gen.Pipeline.AfterSynthesis(c.ctx, &c.pctx, response, &c.trail)
		if err := s.commit(c, completed(final, SourceAfterSynthesis)); err != nil {
			return err
		}
		out = &SynthesisResult{DecisionID: c.id, Warnings: c.warnings(), Response: final, Invocations: c.recorded()}
		c.response = final
		s.done(c, OutcomeCompleted, nil)
		return nil
	})
	return out, err
}

// ReportResults records the combined result of the request's executed steps so far:
// it becomes the record's result, each step result is filed under the accepted phase
// whose plan has that step, and each executed step's response becomes known to plan
// binding. No hook runs.
func (s *Session) ReportResults(ctx context.Context, result *ExecutionResult) error {
	return s.commit(s.begin(ctx, ""), resultsReported(result))
}

// Fail fails the request with err (a planner or synthesizer error, say): the record
// and the state say failed.
func (s *Session) Fail(ctx context.Context, err error) error {
	c := s.begin(ctx, "")
	if werr := s.commit(c, failed(err)); werr != nil {
		return werr
	}
	s.ended(c, err)
	return nil
}

// ended emits the request's invoke_agent span when call c, which began on an open
// request, left it completed or failed (err: why it failed, if it did).
func (s *Session) ended(c *stageCall, err error) {
	if c.open && s.state.Lifecycle != LifecycleOpen && s.state.Lifecycle != "" {
		s.gen.telemetry().endRequest(c.caller, s.state, err, s.d.now())
	}
}

// resultsReported files a combined result: into the record (see attachResults) and,
// for every step that ran, into its run, so binding knows its response. Both keep their
// own copy of the result, which the caller may change afterwards.
func resultsReported(result *ExecutionResult) change {
	result = ownResult(result)
	return change{
		state: func(st *RequestState) {
			accepted := make(map[string]bool, len(st.PriorSteps))
			for i := range st.PriorSteps {
				accepted[st.PriorSteps[i].StepID] = true
			}
			var runs map[string]*StepRun // copied once: a combined result reports every step so far
			for _, r := range result.Steps {
				if r.Skipped || !accepted[r.StepID] {
					continue
				}
				if runs == nil {
					runs = st.writableRuns()
				}
				run := newRun(runs, r.StepID)
				run.Status, run.Retryable = RunFailed, false
				if r.Success {
					run.Status, run.Response = RunSucceeded, r.Response
				}
				run.Attempts = max(run.Attempts, r.Attempts)
			}
		},
		record: func(rec *ExecutionRecord) { attachResults(rec, result) },
	}
}

// attachResults makes result the record's result and files each step result under the
// phase whose plan has that step.
func attachResults(rec *ExecutionRecord, result *ExecutionResult) {
	rec.Result = cloneResult(result)
	phaseOf := map[string][]int{} // step id → the phases whose plans have it
	for i := range rec.Phases {
		rec.Phases[i].Results = nil // a new slice: the old one is shared with stored revisions
		for _, st := range rec.Phases[i].Plan.Steps {
			phaseOf[st.StepID] = append(phaseOf[st.StepID], i)
		}
	}
	for _, r := range result.Steps {
		for _, i := range phaseOf[r.StepID] {
			rec.Phases[i].Results = append(rec.Phases[i].Results, r)
		}
	}
}

// cloneResult copies r and its steps slice; the steps' values are shared.
func cloneResult(r *ExecutionResult) *ExecutionResult {
	c := *r
	c.Steps = slices.Clone(r.Steps)
	return &c
}

// ownResult deep-copies r, like ownPlan: a result whose values do not deep-copy stays
// shared past its steps slice.
func ownResult(r *ExecutionResult) *ExecutionResult {
	c := cloneResult(r)
	if err := deepCopy(&c.Steps); err != nil {
		return cloneResult(r)
	}
	return c
}
