package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/engine/op"
)

// Planner proposes the plan of the next phase. history holds the accepted phases so
// far, with their results; the new plan's phase number is len(history)+1.
type Planner interface {
	Plan(ctx context.Context, pctx *PipelineContext, history []PhaseRecord) (*RoutingPlan, error)
}

// Executor runs one step. done holds the results of the request's steps so far, so
// step parameters may be resolved against them. The response is stored as
// StepResult.Response.
type Executor interface {
	Execute(ctx context.Context, step RoutingStep, done []StepResult) (any, error)
}

// Synthesizer writes the answer from the combined execution result.
type Synthesizer interface {
	Synthesize(ctx context.Context, pctx *PipelineContext, result *ExecutionResult) (string, error)
}

// Request is one request entering the lifecycle.
type Request struct {
	ID                string
	Text              string
	Metadata          map[string]any
	CacheVary         map[string]string
	CacheReadDisabled bool
}

// ErrTooManyPhases is returned when the planner has not produced a terminal plan
// within Lifecycle.MaxPhases phases.
var ErrTooManyPhases = errors.New("planner produced no terminal plan within the phase limit")

// Lifecycle drives one request through every stage:
//
//	before_planning → (plan → validate → after_planning → run steps)* → after_execution
//	→ synthesize → after_synthesis
//
// Phases repeat until the accepted plan is terminal or asks for user input. Every step
// runs as a tool_call operation through Runner: a denied or guard-failed call fails
// that step (its StepResult carries the denial code and reason, or the guard error) and
// the lifecycle goes on with the next step; a step whose depends_on includes a failed
// or skipped step is skipped with skip_reason "dependency_failed". An accepted short
// circuit skips everything after before_planning. An invalid incoming plan, a planner
// or synthesizer error, a before_planning contract error or a required after_planning
// rejection fails the request: nothing later runs, and earlier accepted phases and
// results stay in the failed record. A hook panic fails the record and is re-raised.
//
// The zero values of Runner (no guards), Store (nothing persisted) and Generation are
// valid. A Lifecycle is safe for concurrent use.
type Lifecycle struct {
	Pipeline    *Pipeline
	Runner      *op.Runner
	Planner     Planner
	Executor    Executor
	Synthesizer Synthesizer
	Store       RecordStore
	Generation  string
	// MaxPhases bounds the planning loop; 0 means 8.
	MaxPhases int
}

// Outcome is a finished request: the response (valid only when Run returned no error)
// and the final execution record, which Run returns for failed requests too.
type Outcome struct {
	Response Response
	Record   *ExecutionRecord
}

// Run drives req through the lifecycle. The returned outcome is never nil.
func (l *Lifecycle) Run(ctx context.Context, req Request) (out *Outcome, err error) {
	trail := NewTrail()
	w := NewRecordWriter(l.Store, trail, req.ID, l.Generation)
	out = &Outcome{}
	defer func() {
		if r := recover(); r != nil {
			w.Update(func(rec *ExecutionRecord) { fail(rec, fmt.Errorf("pipeline hook panic: %v", r)) })
			_ = w.Save(context.WithoutCancel(ctx))
			panic(r)
		}
		if err != nil {
			w.Update(func(rec *ExecutionRecord) { fail(rec, err) })
		}
		if serr := w.Save(context.WithoutCancel(ctx)); serr != nil && err == nil {
			err = fmt.Errorf("save execution record: %w", serr)
		}
		out.Record = w.Snapshot()
	}()
	if err := w.Save(ctx); err != nil {
		return out, fmt.Errorf("save execution record: %w", err)
	}

	gate := NewGate(req.CacheVary, req.CacheReadDisabled)
	ctx = WithRequestInfo(ctx, RequestInfo{ID: req.ID, Generation: l.Generation, Gate: gate})
	pctx := &PipelineContext{Request: req.Text, Metadata: req.Metadata, Enrichments: map[string]any{}}
	sc, err := l.Pipeline.BeforePlanning(ctx, pctx, gate, trail)
	if err != nil {
		return out, err
	}
	if sc != nil {
		out.Response = sc.Response
		w.Update(func(rec *ExecutionRecord) {
			rec.Status, rec.FinalResponse, rec.FinalResponseSource = RecordSucceeded, sc.Response.Response, SourceShortCircuit
		})
		return out, nil
	}

	result, err := l.runPhases(ctx, req.ID, pctx, trail, w)
	if err != nil {
		return out, err
	}
	l.Pipeline.AfterExecution(ctx, pctx, result, trail)
	draft, err := l.Synthesizer.Synthesize(ctx, pctx, result)
	if err != nil {
		return out, fmt.Errorf("synthesize: %w", err)
	}
	final := l.Pipeline.AfterSynthesis(ctx, pctx, draft, trail)
	out.Response = Response{Response: final}
	w.Update(func(rec *ExecutionRecord) {
		rec.Status, rec.FinalResponse, rec.FinalResponseSource = RecordSucceeded, final, SourceAfterSynthesis
	})
	return out, nil
}

func fail(rec *ExecutionRecord, err error) {
	rec.Status = RecordFailed
	rec.Error = err.Error()
}

// runPhases plans and executes phases until a terminal plan; each accepted phase is
// recorded (and saved) as soon as its steps ran.
func (l *Lifecycle) runPhases(ctx context.Context, requestID string, pctx *PipelineContext, trail *Trail, w *RecordWriter) (*ExecutionResult, error) {
	maxPhases := l.MaxPhases
	if maxPhases <= 0 {
		maxPhases = 8
	}
	started := time.Now()
	result := &ExecutionResult{Success: true}
	var history []PhaseRecord
	var prior []RoutingStep
	for phase := 1; phase <= maxPhases; phase++ {
		plan, err := l.Planner.Plan(ctx, pctx, history)
		if err != nil {
			return nil, fmt.Errorf("plan phase %d: %w", phase, err)
		}
		if plan == nil {
			return nil, fmt.Errorf("plan phase %d: %w", phase, ErrNoPlan)
		}
		if plan.PhaseNumber == 0 {
			plan.PhaseNumber = phase
		}
		if err := ValidatePlan(plan, l.Pipeline.catalog, prior); err != nil {
			return nil, err
		}
		accepted, err := l.Pipeline.AfterPlanning(ctx, pctx, plan, prior, trail)
		if err != nil {
			return nil, err
		}
		results := l.runSteps(ctx, requestID, accepted, result.Steps)
		record := PhaseRecord{Phase: phase, Plan: accepted, Results: results}
		history = append(history, record)
		prior = append(prior, accepted.Steps...)
		result.PlanID = accepted.PlanID
		result.PhaseCount = phase
		result.Steps = append(result.Steps, results...)
		for _, r := range results {
			result.Success = result.Success && (r.Success || r.Skipped)
		}
		result.TotalDuration = time.Since(started)
		w.Update(func(rec *ExecutionRecord) {
			rec.Phases = append(rec.Phases, record)
			rec.Result = cloneResult(result)
		})
		if err := w.Save(ctx); err != nil {
			return nil, fmt.Errorf("save execution record: %w", err)
		}
		if accepted.IsTerminal() || accepted.NeedsUserInput != nil {
			return result, nil
		}
	}
	return nil, ErrTooManyPhases
}

func cloneResult(r *ExecutionResult) *ExecutionResult {
	c := *r
	c.Steps = append([]StepResult(nil), r.Steps...)
	return &c
}
