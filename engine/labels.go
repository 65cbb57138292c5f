package engine

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/ref"
)

// Bounds of information-flow labels (docs/semantics.md §8.21).
const (
	// MaxLabelLen bounds a label name in bytes.
	MaxLabelLen = 64
	// MaxRequestLabels bounds the distinct labels of one request, and so the labels a
	// generation may declare.
	MaxRequestLabels = 32
	// MaxHistory bounds the executed steps a request keeps for its policies: the last
	// MaxHistory finishes (its labels keep every finish's).
	MaxHistory = 64
)

// labelName is what a label looks like: a lower-case word with digits, '_', '-', '.'.
var labelName = regexp.MustCompile(`^[a-z][a-z0-9_.-]*$`)

// ValidLabel reports why name is not a label name, "" when it is one: at most
// MaxLabelLen bytes of lower-case letters, digits, '_', '-' and '.', starting with a
// letter.
func ValidLabel(name string) string {
	switch {
	case len(name) > MaxLabelLen:
		return fmt.Sprintf("a label is at most %d bytes", MaxLabelLen)
	case !labelName.MatchString(name):
		return "a label is a lower-case word: letters, digits, '_', '-' and '.', starting with a letter"
	}
	return ""
}

// HistoryStep is one executed step of a request (op.HistoryStep).
type HistoryStep = op.HistoryStep

// Flow is what a call knows of its request's labels and history (op.Flow).
type Flow = op.Flow

// Labeler attaches labels to the result a finish reports. Implementations must be safe
// for concurrent use.
type Labeler interface {
	// Labels returns the labels of result, the reported response of the step call
	// (namespace, agent, capability and parameters of the accepted step), each a
	// valid label name, at most MaxRequestLabels of them. A rule that cannot decide
	// attaches its label (fail closed).
	Labels(ctx context.Context, call *op.Call, result any) []string
}

// PhaseFlow is what the request had reported when one of its phases was accepted: the
// calls of that phase's steps are judged on it (see Session.flowOf).
type PhaseFlow struct {
	// Start is the index in RequestState.PriorSteps of the phase's first step.
	Start int `json:"start"`
	// Reported counts the finishes reported before the phase's review began.
	Reported int `json:"reported"`
	// Labels is the request's label set then.
	Labels []string `json:"labels,omitempty"`
}

// unionLabels returns the sorted union of a, which is sorted, and b, sharing a when b
// adds nothing; a is never written.
func unionLabels(a, b []string) []string {
	out := a
	for _, l := range b {
		if _, found := slices.BinarySearch(out, l); found {
			continue
		}
		if len(out) == len(a) {
			out = slices.Clone(a) // the first addition: a stays as it was
		}
		i, _ := slices.BinarySearch(out, l)
		out = slices.Insert(out, i, l)
	}
	return out
}

// stepLabels returns the labels of the result of the accepted step f finishes: the
// generation's label rules over the step and f.Response, and the labels the finish
// states itself (f.Labels, each a valid name). A label set past MaxRequestLabels for
// the request is a *FinishError.
func (s *Session) stepLabels(ctx context.Context, f *Finish) ([]string, error) {
	for _, l := range f.Labels {
		if why := ValidLabel(l); why != "" {
			return nil, &FinishError{Code: FinishInvalid, Detail: fmt.Sprintf("label %q: %s", l, why)}
		}
	}
	labels := unionLabels(nil, f.Labels)
	if s.gen.Labels != nil {
		if step := acceptedStep(s.state, f.StepID); step != nil {
			call := op.Call{
				Operation: op.ToolCall, RequestID: s.state.ID, StepID: step.StepID, Namespace: step.Namespace,
				AgentName: step.AgentName, Capability: step.Capability(), Parameters: step.Parameters(), Phase: s.state.Phase,
				Request: s.state.Request, Metadata: s.state.Metadata,
			}
			labels = unionLabels(labels, s.gen.Labels.Labels(ctx, &call, f.Response))
		}
	}
	if n := len(unionLabels(s.state.Labels, labels)); n > MaxRequestLabels {
		return nil, &FinishError{Code: FinishInvalid, Detail: fmt.Sprintf("the request would carry %d labels, more than %d", n, MaxRequestLabels)}
	}
	return labels, nil
}

// reportFinish adds a finish of step to st's history, and its result's labels to the
// request's: called inside a state write, it shares nothing it changes with the state
// it was given.
func reportFinish(st *RequestState, step string, status RunStatus, labels []string) {
	h := HistoryStep{StepID: step, Status: string(status), Labels: labels}
	if s := acceptedStep(st, step); s != nil {
		h.Namespace, h.AgentName, h.Capability = s.Namespace, s.AgentName, s.Capability()
	}
	history := st.History
	if len(history) >= MaxHistory {
		history = history[len(history)-MaxHistory+1:]
	}
	st.History = append(slices.Clip(history), h)
	st.Reported++
	st.Labels = unionLabels(st.Labels, labels)
}

// StartFrom gives a request's state a history it did not execute here (a test case
// stating where it starts): steps, in order, as if their finishes had been reported
// (a step's status defaults to succeeded), and labels beside those of the steps. It
// returns why it cannot (a name that is not a label, more labels than a request may
// carry, more steps than MaxHistory).
func (st *RequestState) StartFrom(steps []HistoryStep, labels []string) error {
	if len(steps) > MaxHistory {
		return fmt.Errorf("a history holds at most %d steps", MaxHistory)
	}
	all := unionLabels(st.Labels, labels)
	history := slices.Clone(st.History)
	for _, h := range steps {
		if h.Status == "" {
			h.Status = string(RunSucceeded)
		}
		all = unionLabels(all, h.Labels)
		history = append(history, h)
	}
	for _, l := range all {
		if why := ValidLabel(l); why != "" {
			return fmt.Errorf("label %q: %s", l, why)
		}
	}
	if len(all) > MaxRequestLabels {
		return fmt.Errorf("a request carries at most %d labels", MaxRequestLabels)
	}
	st.History, st.Labels, st.Reported = history[max(len(history)-MaxHistory, 0):], all, st.Reported+len(steps)
	return nil
}

// markPhase records, as a phase whose first step is at start is accepted, what the
// request had reported when its review began (reported finishes, labels).
func markPhase(st *RequestState, start, reported int, labels []string) {
	st.PhaseFlows = append(slices.Clip(st.PhaseFlows), PhaseFlow{Start: start, Reported: reported, Labels: labels})
}

// flowOf returns what call may know of where its request's data came from: the labels
// flowing into it through references (call.labels) and its Flow. A call of an accepted
// step sees what the request had reported when the step's phase began its review, plus
// every step the call's step refers to ({{step-N…}} in its instruction or parameters,
// or a dependency) with that step's labels: so steps of one phase with no dependency
// between them never see each other. Any other call (binding off, a step the
// request does not know, a phase accepted before the request kept flows) sees all the
// request has reported. An unknown request has no flow.
func (s *Session) flowOf(call *op.Call) ([]string, *op.Flow) {
	st := s.known()
	if st == nil {
		return nil, &op.Flow{}
	}
	labels, seen := st.Labels, len(st.History)
	idx := slices.IndexFunc(st.PriorSteps, func(p RoutingStep) bool { return p.StepID == call.StepID })
	refs := referencedSteps(call.Parameters, nil)
	if idx >= 0 {
		step := &st.PriorSteps[idx]
		refs = referencedSteps(step.Metadata["parameters"], refs)
		refs = referencedSteps(step.Instruction, refs)
		refs = append(refs, step.DependsOn...)
		refs = append(refs, step.ImplicitDeps...)
		for i := len(st.PhaseFlows) - 1; i >= 0; i-- {
			if mark := st.PhaseFlows[i]; mark.Start <= idx {
				labels, seen = mark.Labels, max(len(st.History)-(st.Reported-mark.Reported), 0)
				break
			}
		}
	}
	history := st.History[:seen]
	if len(refs) == 0 {
		return nil, &op.Flow{Labels: labels, History: history}
	}
	var in []string
	for _, id := range refs {
		if run := st.Runs[id]; run != nil {
			in = unionLabels(in, run.Labels)
		}
	}
	for _, h := range st.History[seen:] {
		if slices.Contains(refs, h.StepID) {
			history = append(slices.Clip(history), h)
		}
	}
	return in, &op.Flow{Labels: unionLabels(labels, in), History: history}
}

// referencedSteps appends to ids the step ids that {{step…}} references in the strings
// of v name. A value it cannot walk adds nothing: the step's parameters were validated
// when its plan was accepted.
func referencedSteps(v any, ids []string) []string {
	_ = ref.Walk(v, func(_ []byte, s string) error {
		refs, err := ref.Scan(s)
		if err != nil {
			return nil
		}
		for _, r := range refs {
			if !slices.Contains(ids, r.StepID) {
				ids = append(ids, r.StepID)
			}
		}
		return nil
	})
	return ids
}
