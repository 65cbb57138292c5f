package replay

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/decisionlog"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// fromEvents returns the decisions of a decision log's events: each after_planning
// call with its plan and the steps accepted before it, and each operation check, bound
// against the plans the request's events show accepted and the steps its checks
// allowed before it. Events without a payload (the JSON log's, unless payloads were
// logged) are skipped, and so are events without a request id or an outcome (no
// decision agentd wrote); other kinds of events decide nothing to replay.
func fromEvents(events []*decisionlog.Event) *Set {
	set := &Set{}
	slices.SortStableFunc(events, func(a, b *decisionlog.Event) int { return cmp.Compare(a.RequestID, b.RequestID) })
	for start := 0; start < len(events); {
		end := start + 1
		for end < len(events) && events[end].RequestID == events[start].RequestID {
			end++
		}
		set.Add(requestEvents(events[start:end]))
		start = end
	}
	return set
}

// requestEvents replays the events of one request, in time order.
func requestEvents(events []*decisionlog.Event) *Set {
	slices.SortStableFunc(events, func(a, b *decisionlog.Event) int { return a.Timestamp.Compare(b.Timestamp) })
	set := &Set{}
	st := &engine.RequestState{ID: events[0].RequestID, Runs: map[string]*engine.StepRun{}}
	for _, e := range events {
		switch {
		case e.RequestID == "" || e.Outcome == "":
			set.Skips = append(set.Skips, Skip{RequestID: e.RequestID, DecisionID: e.DecisionID, Reason: "a decision event without a request id or an outcome"})
		case e.SchemaVersion != decisionlog.SchemaVersion:
			set.Skips = append(set.Skips, Skip{RequestID: e.RequestID, DecisionID: e.DecisionID, Reason: schemaSkip("decision event", e.SchemaVersion, decisionlog.SchemaVersion)})
		case e.Kind == config.EventStage && e.Stage == engine.StageAfterPlanning && e.Outcome != string(engine.OutcomeReplayed):
			d, err := planEvent(e)
			if err != nil {
				set.Skips = append(set.Skips, Skip{RequestID: e.RequestID, DecisionID: e.DecisionID, Reason: err.Error()})
				continue
			}
			set.Decisions = append(set.Decisions, d)
			accepted(st, e, d.Input.Prior)
		case e.Kind == config.EventCheck && e.Operation != "":
			d, err := checkEvent(e, st)
			if err != nil {
				set.Skips = append(set.Skips, Skip{RequestID: e.RequestID, DecisionID: e.DecisionID, Reason: err.Error()})
				continue
			}
			set.Decisions = append(set.Decisions, d)
			if e.Operation == op.ToolCall && e.Outcome == string(engine.OutcomeAllowed) {
				run := engine.StepRun{Status: engine.RunStarted, Attempts: 1}
				if prev := st.Runs[e.StepID]; prev != nil {
					run.Attempts = prev.Attempts + 1
				}
				st.Runs[e.StepID] = &run
			}
		}
	}
	return set
}

// planEvent is the decision of an after_planning event.
func planEvent(e *decisionlog.Event) (Decision, error) {
	var plan *engine.RoutingPlan
	var prior []engine.RoutingStep
	if err := field(e, "plan", &plan); err != nil || plan == nil {
		return Decision{}, noPayload(e, err)
	}
	if err := field(e, "prior_steps", &prior); err != nil {
		return Decision{}, noPayload(e, err)
	}
	in := compare.Input{RequestID: e.RequestID, Plan: plan, Prior: prior}
	_ = field(e, "request", &in.Request)
	_ = field(e, "metadata", &in.Metadata)
	_ = field(e, "enrichments", &in.Enrichments)
	live := compare.Verdict{Outcome: engine.CallOutcome(e.Outcome), Cause: e.Cause, Violations: e.Violations}
	return Decision{RequestID: e.RequestID, DecisionID: e.DecisionID, Phase: plan.PhaseNumber, Input: in, Live: live, Masked: masked(e)}, nil
}

// accepted files an accepted plan's steps as the request's prior steps.
func accepted(st *engine.RequestState, e *decisionlog.Event, prior []engine.RoutingStep) {
	var plan *engine.RoutingPlan
	if e.Outcome != string(engine.OutcomeAccepted) || field(e, "accepted_plan", &plan) != nil || plan == nil {
		return
	}
	st.PriorSteps = append(slices.Clip(prior), plan.Steps...)
	st.Phase = max(plan.PhaseNumber, st.Phase+1)
}

// checkEvent is the decision of a check event, bound against st as it stands.
func checkEvent(e *decisionlog.Event, st *engine.RequestState) (Decision, error) {
	var call op.Call
	if err := field(e, "call", &call); err != nil || call.Operation == "" {
		return Decision{}, noPayload(e, err)
	}
	_ = field(e, "request", &call.Request)
	_ = field(e, "metadata", &call.Metadata)
	live := compare.Verdict{Outcome: engine.CallOutcome(e.Outcome), Cause: e.Cause}
	if e.Denial != nil && e.Outcome == string(engine.OutcomeDenied) {
		live.Denial = &op.Denial{Code: e.Denial.Code, Reason: e.Denial.Reason}
	}
	snap := *st
	snap.Runs = maps.Clone(st.Runs)
	snap.Request, snap.Metadata = call.Request, call.Metadata // what the guards saw
	return Decision{RequestID: e.RequestID, DecisionID: e.DecisionID, Call: call, State: &snap, Live: live, Masked: masked(e)}, nil
}

// field decodes the payload field name of e into v; absent is no error.
func field(e *decisionlog.Event, name string, v any) error {
	raw, ok := e.Input[name]
	if !ok {
		raw, ok = e.Output[name]
	}
	if !ok {
		return nil
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func noPayload(e *decisionlog.Event, err error) error {
	if err != nil {
		return fmt.Errorf("the event's payload does not decode: %v", err)
	}
	if len(e.Erased) == 1 && e.Erased[0] == "*" {
		return fmt.Errorf("the event carries no payload (its generation's masks were unknown)")
	}
	return fmt.Errorf("the event carries no payload (only the file and HTTP sinks, or the log with --log-payloads, have it)")
}

func masked(e *decisionlog.Event) []string {
	return append(slices.Clone(e.Erased), e.Masked...)
}
