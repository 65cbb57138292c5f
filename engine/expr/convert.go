package expr

import (
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// The conversions below build the JSON-shaped maps expressions see for plan, step, result
// and call: the JSON field names of the Go types, omitempty fields absent when empty (a
// nil *bool absent, a set one present even when false), times as RFC 3339 strings with
// nanoseconds as encoding/json writes them, durations and ints as int64. Unlike JSON, a
// nil steps slice becomes an empty list, so size(plan.steps) never fails. String slices
// and the metadata, parameters and response values are shared, not copied.

func planObject(p *engine.RoutingPlan) map[string]any {
	m := make(map[string]any, 9)
	m["plan_id"] = p.PlanID
	m["original_request"] = p.OriginalRequest
	if p.Mode != "" {
		m["mode"] = string(p.Mode)
	}
	steps := make([]any, len(p.Steps))
	for i := range p.Steps {
		steps[i] = stepObject(&p.Steps[i])
	}
	m["steps"] = steps
	m["created_at"] = p.CreatedAt.Format(time.RFC3339Nano)
	if p.Terminal != nil {
		m["terminal"] = *p.Terminal
	}
	if p.ContinuationNote != "" {
		m["continuation_note"] = p.ContinuationNote
	}
	if p.PhaseNumber != 0 {
		m["phase_number"] = int64(p.PhaseNumber)
	}
	if n := p.NeedsUserInput; n != nil {
		needs := map[string]any{"question": n.Question}
		if len(n.MissingFields) > 0 {
			needs["missing_fields"] = n.MissingFields
		}
		if n.PartialProgress != "" {
			needs["partial_progress"] = n.PartialProgress
		}
		m["needs_user_input"] = needs
	}
	return m
}

func stepObject(s *engine.RoutingStep) map[string]any {
	m := make(map[string]any, 7)
	m["step_id"] = s.StepID
	m["agent_name"] = s.AgentName
	m["namespace"] = s.Namespace
	m["instruction"] = s.Instruction
	if len(s.DependsOn) > 0 {
		m["depends_on"] = s.DependsOn
	}
	if len(s.ImplicitDeps) > 0 {
		m["implicit_deps"] = s.ImplicitDeps
	}
	if len(s.Metadata) > 0 {
		m["metadata"] = s.Metadata
	}
	return m
}

func resultObject(r *engine.ExecutionResult) map[string]any {
	steps := make([]any, len(r.Steps))
	for i := range r.Steps {
		steps[i] = stepResultObject(&r.Steps[i])
	}
	return map[string]any{
		"plan_id":        r.PlanID,
		"steps":          steps,
		"success":        r.Success,
		"total_duration": int64(r.TotalDuration),
		"phase_count":    int64(r.PhaseCount),
	}
}

func stepResultObject(s *engine.StepResult) map[string]any {
	m := make(map[string]any, 12)
	m["step_id"] = s.StepID
	m["agent_name"] = s.AgentName
	m["capability"] = s.Capability
	m["namespace"] = s.Namespace
	if len(s.Parameters) > 0 {
		m["parameters"] = s.Parameters
	}
	if s.Response != nil {
		m["response"] = s.Response
	}
	m["success"] = s.Success
	if s.Error != "" {
		m["error"] = s.Error
	}
	m["duration"] = int64(s.Duration)
	m["attempts"] = int64(s.Attempts)
	if s.Skipped {
		m["skipped"] = true
	}
	if s.SkipReason != "" {
		m["skip_reason"] = s.SkipReason
	}
	return m
}

func callObject(c *op.Call) map[string]any {
	m := make(map[string]any, 11)
	m["operation"] = string(c.Operation)
	m["request_id"] = c.RequestID
	for _, f := range [...]struct{ name, value string }{
		{"step_id", c.StepID}, {"namespace", c.Namespace}, {"agent_name", c.AgentName},
		{"capability", c.Capability}, {"model", c.Model}, {"request", c.Request},
	} {
		if f.value != "" {
			m[f.name] = f.value
		}
	}
	if len(c.Parameters) > 0 {
		m["parameters"] = c.Parameters
	}
	if c.Phase != 0 {
		m["phase"] = int64(c.Phase)
	}
	if len(c.Metadata) > 0 {
		m["metadata"] = c.Metadata
	}
	if c.Step != nil {
		m["step"] = c.Step
	}
	return m
}
