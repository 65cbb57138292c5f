package decisionlog

import (
	"context"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// pending is one report waiting for the worker, with the masks of the generation it
// ran on (taken when it was reported, so a reload meanwhile changes nothing).
type pending struct {
	stage   *engine.StageReport
	check   *engine.CheckReport
	refusal *refusal
	built   *Event // a prebuilt event (a shadow event)
	rules   *config.DecisionLog
	known   bool // the generation was known (else rules are unknown, not none)
}

type refusal struct {
	decisionID, requestID string
	stage                 engine.Stage
	err                   *engine.RefusalError
	at                    time.Time
}

func newRefusal(ctx context.Context, stage engine.Stage, id string, r *engine.RefusalError) *refusal {
	decisionID, _ := engine.DecisionIDFrom(ctx)
	return &refusal{decisionID: decisionID, requestID: id, stage: stage, err: r, at: time.Now()}
}

// event returns the event of p, without payload: a report's is built in scratch,
// reusing its hooks' array and its payload maps (empty: see Logger.forget); a prebuilt
// event is itself.
func (p *pending) event(scratch *Event) *Event {
	in, out := scratch.Input, scratch.Output
	switch {
	case p.stage != nil:
		stageEvent(scratch, p.stage)
	case p.check != nil:
		checkEvent(scratch, p.check)
	case p.refusal != nil:
		refusalEvent(scratch, p.refusal)
	default:
		return p.built
	}
	scratch.Input, scratch.Output = in, out
	return scratch
}

// payload returns the call's payload, unmasked: the report's own values, in scratch
// (empty: see Logger.forget; nil for a map of its own).
func (p *pending) payload(scratch map[string]any) map[string]any {
	switch {
	case p.stage != nil:
		return stagePayload(scratch, p.stage)
	case p.check != nil:
		return callPayload(scratch, p.check.Call)
	}
	return nil
}

func stageEvent(e *Event, r *engine.StageReport) {
	*e = Event{
		Hooks:         e.Hooks[:0],
		SchemaVersion: SchemaVersion, Kind: config.EventStage, DecisionID: r.DecisionID, Timestamp: r.Started.UTC(),
		RequestID: r.RequestID, Stage: r.Stage, Generation: r.Generation, PolicyRevision: r.PolicyRevision,
		Outcome: string(r.Outcome), Cause: r.Cause, Violations: r.Violations, DurationMS: millis(r.Duration),
	}
	for _, inv := range r.Invocations {
		h := Hook{Name: inv.HookName, Status: inv.Status, Mode: inv.Mode, DurationMS: millis(inv.Duration)}
		if d := inv.Decision; d != nil {
			h.FailurePolicy, h.Action, h.Reason, h.Cause = d.FailurePolicy, d.Action, d.Reason, d.Cause
		}
		e.Hooks = append(e.Hooks, h)
		e.WouldDeny = append(e.WouldDeny, inv.WouldDeny...)
	}
	if pe, ok := engine.AsPlanError(r.Err); ok {
		e.Violations = []engine.Violation{{Code: string(pe.Code), StepID: pe.StepID, Message: pe.Message}}
	}
}

func checkEvent(e *Event, r *engine.CheckReport) {
	*e = Event{
		Hooks:         e.Hooks[:0],
		SchemaVersion: SchemaVersion, Kind: config.EventCheck, DecisionID: r.DecisionID, Timestamp: r.Started.UTC(),
		RequestID: r.Call.RequestID, Operation: r.Call.Operation, StepID: r.Call.StepID, Generation: r.Generation,
		PolicyRevision: r.PolicyRevision, Outcome: string(r.Outcome), DurationMS: millis(r.Duration),
	}
	if !r.Call.Operation.Known() {
		e.Operation = ""
	}
	if rec := r.Record; rec != nil {
		e.WouldDeny, e.Approval = rec.WouldDeny, rec.Approval
		if rec.Outcome != engine.CheckAllow {
			e.Denial = &Denial{Code: rec.Code, Reason: rec.Reason, Guard: rec.Guard, GuardIndex: rec.GuardIndex, Binding: rec.Binding,
				Labels: rec.Labels, CallLabels: rec.CallLabels}
		}
	} else if den, ok := op.AsDenial(r.Err); ok {
		e.Denial = &Denial{Code: den.Code, Reason: den.Reason}
	}
	switch {
	case r.Outcome == engine.OutcomeGuardError:
		e.Cause = engine.CauseGuardError
	case e.Denial != nil && e.Denial.Guard == engine.BindingGuard:
		e.Cause = engine.CauseBindingDenied
	case e.Denial != nil:
		e.Cause = engine.CauseGuardDenied
	}
}

func refusalEvent(e *Event, r *refusal) {
	*e = Event{
		Hooks:         e.Hooks[:0],
		SchemaVersion: SchemaVersion, Kind: config.EventRefusal, DecisionID: r.decisionID, Timestamp: r.at.UTC(),
		RequestID: r.requestID, Stage: r.stage, Outcome: string(engine.RefusedStoreUnavailable),
	}
	if r.err != nil {
		e.Outcome, e.Generation = string(r.err.Code), r.err.Generation
	}
}

// stagePayload is what a stage call was given and answered, in p (empty, or nil for a
// new map); empty parts are left out.
func stagePayload(p map[string]any, r *engine.StageReport) map[string]any {
	p = orNew(p)
	p["request"] = r.Request
	put := func(k string, v any, ok bool) {
		if ok {
			p[k] = v
		}
	}
	put("metadata", r.Metadata, len(r.Metadata) > 0)
	put("enrichments", r.Enrichments, len(r.Enrichments) > 0)
	put("plan", r.Plan, r.Plan != nil)
	put("prior_steps", r.PriorSteps, r.Stage == engine.StageAfterPlanning && len(r.PriorSteps) > 0)
	put("accepted_plan", r.Accepted, r.Accepted != nil)
	put("result", r.Result, r.Result != nil)
	put("response", r.Response, r.Stage == engine.StageAfterSynthesis)
	return p
}

// callPayload is a checked call: its request and metadata (a turn's) as the payload's
// request and metadata, so that one mask covers them wherever they come from, and the
// rest of the call as call; p is as stagePayload's.
func callPayload(p map[string]any, c op.Call) map[string]any {
	call := map[string]any{"operation": string(c.Operation), "request_id": c.RequestID}
	put := func(k string, v any, ok bool) {
		if ok {
			call[k] = v
		}
	}
	put("step_id", c.StepID, c.StepID != "")
	put("namespace", c.Namespace, c.Namespace != "")
	put("agent_name", c.AgentName, c.AgentName != "")
	put("capability", c.Capability, c.Capability != "")
	put("parameters", c.Parameters, c.Parameters != nil)
	put("model", c.Model, c.Model != "")
	put("phase", c.Phase, c.Phase != 0)
	p = orNew(p)
	p["call"] = call
	if c.Request != "" {
		p["request"] = c.Request
	}
	if len(c.Metadata) > 0 {
		p["metadata"] = c.Metadata
	}
	return p
}

// orNew returns m, or a new map when m is nil.
func orNew(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
