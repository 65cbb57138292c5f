package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
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

// Lifecycle drives one request through every stage, in process, with a Session of
// Driver:
//
//	before_planning → (plan → after_planning → run steps)* → after_execution
//	→ synthesize → after_synthesis
//
// Phases repeat until the accepted plan is terminal or asks for user input. Every step
// runs as a tool_call operation through the generation's runner: a denied or
// guard-failed call fails that step (its StepResult carries the denial code and reason,
// or the guard error) and the lifecycle goes on with the next step; a step whose
// depends_on includes a failed or skipped step is skipped with skip_reason
// "dependency_failed". Each phase's results are recorded as soon as its steps ran. An
// accepted short circuit skips everything after before_planning. An invalid incoming
// plan, a planner or synthesizer error, a before_planning contract error or a required
// after_planning rejection fails the request: nothing later runs, and earlier accepted
// phases and results stay in the failed record. A hook panic fails the record and is
// re-raised.
//
// A Lifecycle is safe for concurrent use.
type Lifecycle struct {
	Driver      *Driver
	Planner     Planner
	Executor    Executor
	Synthesizer Synthesizer
	// MaxPhases bounds the planning loop; 0 means 8.
	MaxPhases int
}

// Outcome is a finished request: the response (valid only when Run returned no error)
// and the final execution record, which Run returns for failed requests too (as
// Session.Record returns it: its entries' nested values are read-only).
type Outcome struct {
	Response Response
	Record   *ExecutionRecord
}

// Run drives req through the lifecycle. The returned outcome is never nil; its record
// is nil only when the request could not be opened.
func (l *Lifecycle) Run(ctx context.Context, req Request) (out *Outcome, err error) {
	out = &Outcome{}
	s, err := l.Driver.Open(ctx, req.ID, Opening{
		Text: req.Text, Metadata: req.Metadata, CacheVary: req.CacheVary, CacheReadDisabled: req.CacheReadDisabled,
	})
	if err != nil {
		return out, err
	}
	defer func() { out.Record, _ = s.Record(context.WithoutCancel(ctx)) }()
	bp, err := s.BeforePlanning(ctx)
	if err != nil {
		return out, err
	}
	if bp.ShortCircuit != nil {
		out.Response = bp.ShortCircuit.Response
		return out, nil
	}
	result, err := l.runPhases(ctx, s)
	if err != nil {
		return out, err
	}
	if _, err := s.AfterExecution(ctx, result); err != nil {
		return out, err
	}
	draft, err := l.Synthesizer.Synthesize(ctx, s.Context(), result)
	if err != nil {
		return out, l.fail(ctx, s, fmt.Errorf("synthesize: %w", err))
	}
	final, err := s.AfterSynthesis(ctx, draft)
	if err != nil {
		return out, err
	}
	out.Response = Response{Response: final.Response}
	return out, nil
}

// fail fails the request with err and returns err (or the store error that kept the
// failure from being recorded).
func (l *Lifecycle) fail(ctx context.Context, s *Session, err error) error {
	if serr := s.Fail(ctx, err); serr != nil {
		return serr
	}
	return err
}

// runPhases plans and runs phases until a terminal plan; each phase's results are
// recorded as soon as its steps ran.
func (l *Lifecycle) runPhases(ctx context.Context, s *Session) (*ExecutionResult, error) {
	maxPhases := l.MaxPhases
	if maxPhases <= 0 {
		maxPhases = 8
	}
	started := time.Now()
	result := &ExecutionResult{Success: true}
	var history []PhaseRecord
	for phase := 1; phase <= maxPhases; phase++ {
		plan, err := l.Planner.Plan(ctx, s.Context(), history)
		if err != nil {
			return nil, l.fail(ctx, s, fmt.Errorf("plan phase %d: %w", phase, err))
		}
		if plan == nil {
			return nil, l.fail(ctx, s, fmt.Errorf("plan phase %d: %w", phase, ErrNoPlan))
		}
		reviewed, err := s.AfterPlanning(ctx, plan, 0)
		if _, invalid := AsPlanError(err); invalid {
			return nil, l.fail(ctx, s, err)
		}
		if err != nil {
			return nil, err
		}
		accepted := reviewed.Plan
		results := l.runSteps(ctx, s, accepted, result.Steps)
		history = append(history, PhaseRecord{Phase: accepted.PhaseNumber, Plan: accepted, Results: results})
		result.PlanID = accepted.PlanID
		result.PhaseCount = phase
		result.Steps = append(result.Steps, results...)
		for _, r := range results {
			result.Success = result.Success && (r.Success || r.Skipped)
		}
		result.TotalDuration = time.Since(started)
		if err := s.ReportResults(ctx, result); err != nil {
			return nil, err
		}
		if accepted.IsTerminal() || accepted.NeedsUserInput != nil {
			return result, nil
		}
	}
	return nil, l.fail(ctx, s, ErrTooManyPhases)
}
