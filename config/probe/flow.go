package probe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// maxLabelSets bounds the label sets a run tries: the first maxLabelSets-1 declared
// labels one at a time, and all of them together.
const maxLabelSets = 8

// flowReaders names what of gen reads the request's flow (labels, call.labels or
// history; docs/semantics.md §8.21): "after_planning" for the stage's hooks, "guards"
// for the guards.
func flowReaders(gen *config.Generation) []string {
	var out []string
	for _, r := range []string{string(engine.StageAfterPlanning), "guards"} {
		if gen.Reads.May(readerStage(r), "labels") || gen.Reads.May(readerStage(r), "history") {
			out = append(out, r)
		}
	}
	return out
}

// readerStage is the stage whose reads (config.Generation.Reads) are reader's: the
// empty stage for the guards.
func readerStage(reader string) engine.Stage {
	if reader == "guards" {
		return ""
	}
	return engine.Stage(reader)
}

// labelSets are the label sets the seeds are repeated under: each label the config
// declares alone, in declaration order (at most maxLabelSets-1 of them), then all the
// declared labels together when there are two or more.
func labelSets(gen *config.Generation) [][]string {
	var declared []string
	for _, r := range gen.LabelRules {
		if !slices.Contains(declared, r.Label) {
			declared = append(declared, r.Label)
		}
	}
	var out [][]string
	for _, l := range declared[:min(len(declared), maxLabelSets-1)] {
		out = append(out, []string{l})
	}
	if len(declared) > 1 {
		out = append(out, slices.Sorted(slices.Values(declared)))
	}
	return out
}

// labelled returns seeds followed by each seed that starts from no flow of its own
// repeated under each of sets, named by it and knowing which seed it repeats.
func labelled(seeds []Case, sets [][]string) []Case {
	out := seeds
	for i := range seeds {
		if seeds[i].flowing() {
			continue
		}
		for _, set := range sets {
			c := seeds[i].with("", "")
			c.Source += " with the labels " + strings.Join(set, ", ")
			c.Labels, c.plain = slices.Clone(set), i+1
			out = append(out, c)
		}
	}
	return out
}

// flowing reports whether c's request starts from labels or a history.
func (c *Case) flowing() bool { return len(c.Labels) > 0 || len(c.History) > 0 }

// flow returns the flow c's request starts from, as agentd test starts a case from
// given.history and given.labels (engine.RequestState.StartFrom).
func (c *Case) flow() (*engine.Flow, error) {
	var st engine.RequestState
	if err := st.StartFrom(c.History, c.Labels); err != nil {
		return nil, err
	}
	return &engine.Flow{Labels: st.Labels, History: st.History}, nil
}

// flowContext names c's flow for its Context: "" for none.
func flowContext(c *Case) string {
	if !c.flowing() {
		return ""
	}
	return " with the flow " + compactJSON(map[string]any{"labels": c.Labels, "history": c.History})
}

// guardDenial returns the identity of the first step of plan whose tool_call the
// guards deny under flow, and the denial's code (guard_error for a guard that failed),
// or "" when they allow every call: each call is its step as planned, checked as the
// request that accepted plan as its next phase would be (engine.Generation.EvaluateCall,
// so plan binding passes), seeing c's request, metadata and flow. A step that could not
// be called (an invalid call) is not checked: the plan review's verdict on it stands.
func (p *prober) guardDenial(ctx context.Context, c *Case, plan *engine.RoutingPlan, flow *engine.Flow) (id, code string) {
	phase := max(plan.PhaseNumber, 1) // the phase review would accept plan as
	st := &engine.RequestState{ID: "probe", Generation: p.gen.ID, Request: c.Request, Metadata: c.Metadata,
		PriorSteps: slices.Concat(c.Prior, plan.Steps), Phase: phase, Labels: flow.Labels, History: flow.History}
	for _, s := range plan.Steps {
		call := op.Call{Operation: op.ToolCall, RequestID: st.ID, StepID: s.StepID, Namespace: s.Namespace, AgentName: s.AgentName,
			Capability: s.Capability(), Parameters: s.Parameters(), Phase: phase, Flow: flow}
		err := p.gen.EvaluateCall(ctx, st, call)
		var den *op.Denial
		var invalid *op.CallError
		switch {
		case err == nil, errors.As(err, &invalid):
			continue
		case errors.As(err, &den):
			return identity(s), den.Code
		default:
			return identity(s), string(engine.CheckGuardError)
		}
	}
	return "", ""
}

// LabelFinding is a reader of the request's flow (the after_planning stage or the
// guards) whose decisions no label set the probe tried changed: a rule reading labels
// that never fires, such as one naming a label the config does not declare.
type LabelFinding struct {
	Reader string `json:"reader"`
	Detail string `json:"detail"`
}

// silentReaders returns a LabelFinding per reader of the request's labels under which
// no seed repeated under a label set ended otherwise than the seed it repeats: for the
// after_planning stage, accepted or rejected by the policy with the same violations;
// for the guards, the same denial of the same step of the seed's plan (checked
// whatever the stage decided). results are the seeds' outcomes, in seed order. A
// reader of the history alone is not judged: the label sets start from no history.
func (p *prober) silentReaders(ctx context.Context, seeds []Case, results []outcome, readers []string, sets [][]string) []LabelFinding {
	var out []LabelFinding
	for _, reader := range readers {
		if !p.gen.Reads.May(readerStage(reader), "labels") {
			continue
		}
		fired, compared := false, 0
		for i := range seeds {
			s := &seeds[i]
			if s.plain == 0 {
				continue
			}
			plain := &seeds[s.plain-1]
			compared++
			if reader == string(engine.StageAfterPlanning) {
				a, b := results[i], results[s.plain-1]
				fired = a.ending != b.ending || !slices.Equal(a.violations, b.violations)
			} else {
				fired = p.guardsDecide(ctx, s) != p.guardsDecide(ctx, plain)
			}
			if fired {
				break
			}
		}
		if !fired && compared > 0 {
			out = append(out, LabelFinding{Reader: reader, Detail: fmt.Sprintf("the %s read the request's labels or history, "+
				"but under none of the label sets tried (%s) did they decide any of %d seed plans otherwise than without labels: "+
				"a rule that reads labels never fires (does it name a label the config declares?)", readerName(reader), setsText(sets), compared)})
		}
	}
	return out
}

// guardsDecide is what the guards decide of c's plan, as guardDenial, whatever the
// plan review decides: "identity code" of the first denied step, "" when none is (or
// the plan does not decode).
func (p *prober) guardsDecide(ctx context.Context, c *Case) string {
	plan, err := decodePlan(c.Plan)
	if err != nil {
		return ""
	}
	flow, err := c.flow()
	if err != nil {
		return ""
	}
	id, code := p.guardDenial(ctx, c, plan, flow)
	return id + " " + code
}

// setsText renders label sets as "[a] [b] [a, b]".
func setsText(sets [][]string) string {
	out := make([]string, len(sets))
	for i, s := range sets {
		out[i] = "[" + strings.Join(s, ", ") + "]"
	}
	return strings.Join(out, " ")
}

func readerName(reader string) string {
	if reader == string(engine.StageAfterPlanning) {
		return "after_planning hooks"
	}
	return reader
}
