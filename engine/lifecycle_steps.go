package engine

import (
	"context"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/engine/op"
)

// SkipDependencyFailed is the skip reason of a step whose dependency did not succeed.
const SkipDependencyFailed = "dependency_failed"

// runSteps runs the steps of one accepted plan in dependency order (plan order among
// ready steps). done holds the results of earlier phases.
func (l *Lifecycle) runSteps(ctx context.Context, s *Session, plan *RoutingPlan, done []StepResult) []StepResult {
	results := make([]StepResult, 0, len(plan.Steps))
	ok := make(map[string]bool, len(plan.Steps))
	for _, i := range dependencyOrder(plan.Steps) {
		step := plan.Steps[i]
		r := StepResult{
			StepID: step.StepID, AgentName: step.AgentName, Namespace: step.Namespace,
			Capability: step.Capability(), Parameters: step.Parameters(),
		}
		if blocked(step, ok) {
			r.Skipped, r.SkipReason = true, SkipDependencyFailed
		} else {
			l.runStep(ctx, s, step, slices.Concat(done, results), &r)
		}
		ok[step.StepID] = r.Success
		results = append(results, r)
	}
	return results
}

func blocked(step RoutingStep, ok map[string]bool) bool {
	for _, dep := range step.DependsOn {
		if !ok[dep] {
			return true
		}
	}
	return false
}

// runStep runs one step as a tool_call operation: guards first, then the executor;
// finish always runs.
func (l *Lifecycle) runStep(ctx context.Context, s *Session, step RoutingStep, done []StepResult, r *StepResult) {
	call := op.Call{
		Operation: op.ToolCall, RequestID: s.ID(), StepID: step.StepID,
		Namespace: step.Namespace, AgentName: step.AgentName,
		Capability: r.Capability, Parameters: r.Parameters,
	}
	started := time.Now()
	opctx, finish, err := s.StartOperation(ctx, call)
	if err != nil {
		r.Error = err.Error()
		if finish != nil {
			finish(op.Result{Call: call, StartedAt: started, EndedAt: time.Now(), Outcome: op.Denied, Err: err})
		}
		r.Duration = time.Since(started)
		return
	}
	r.Attempts = 1
	resp, err := l.Executor.Execute(opctx, step, done)
	r.Duration = time.Since(started)
	outcome := op.Completed
	if err != nil {
		outcome = op.Failed
		r.Error = err.Error()
	} else {
		r.Response, r.Success = resp, true
	}
	finish(op.Result{Call: call, StartedAt: started, EndedAt: time.Now(), Outcome: outcome, Err: err})
}

// dependencyOrder returns step indexes in a topological order of depends_on, keeping
// plan order among steps that are ready together. The plan is validated, so there are
// no cycles; an unknown dependency is treated as already satisfied.
func dependencyOrder(steps []RoutingStep) []int {
	index := make(map[string]int, len(steps))
	for i, s := range steps {
		index[s.StepID] = i
	}
	placed := make([]bool, len(steps))
	order := make([]int, 0, len(steps))
	for len(order) < len(steps) {
		progressed := false
		for i, s := range steps {
			if placed[i] || !ready(s, index, placed) {
				continue
			}
			placed[i], progressed = true, true
			order = append(order, i)
		}
		if !progressed {
			for i := range steps {
				if !placed[i] {
					order = append(order, i)
				}
			}
			break
		}
	}
	return order
}

func ready(s RoutingStep, index map[string]int, placed []bool) bool {
	for _, dep := range s.DependsOn {
		if j, ok := index[dep]; ok && !placed[j] {
			return false
		}
	}
	return true
}
