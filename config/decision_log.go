package config

import (
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/op"
)

// DecisionLog is the compiled decision_log section of a generation: the masks applied
// to the payload of every decision event of a call that ran on it, and the rules that
// drop events. It is immutable and safe for concurrent use; a nil *DecisionLog masks
// and drops nothing.
type DecisionLog struct {
	masks []MaskRule
	drops []DropRule
}

// Decision event kinds, as drop rules name them.
const (
	EventStage   = "stage"   // a stage call
	EventCheck   = "check"   // an operation check
	EventRefusal = "refusal" // a call refused before any hook ran
	EventShadow  = "shadow"  // the shadow configuration disagreed with a live decision
)

// LogFacts are what drop rules match of one decision event.
type LogFacts struct {
	Kind, Stage, Operation, Outcome, Cause string
}

// DropRule drops the events whose facts match every field it sets (a field matches
// when it holds the event's value).
type DropRule struct {
	Kind, Stage, Operation, Outcome, Cause []string
}

func (r *DropRule) matches(f LogFacts) bool {
	match := func(want []string, got string) bool { return want == nil || slices.Contains(want, got) }
	return match(r.Kind, f.Kind) && match(r.Stage, f.Stage) && match(r.Operation, f.Operation) &&
		match(r.Outcome, f.Outcome) && match(r.Cause, f.Cause)
}

// Drops reports whether an event with facts f is dropped.
func (d *DecisionLog) Drops(f LogFacts) bool {
	if d == nil {
		return false
	}
	for i := range d.drops {
		if d.drops[i].matches(f) {
			return true
		}
	}
	return false
}

// Mask returns payload with every mask applied, each to what its path names and to
// every copy of it in the payload (see logcopies.go), and the paths that erased and
// that replaced something, in rule order: a rule's own path as written, then each
// copy's. payload is not changed (see MaskRule).
func (d *DecisionLog) Mask(payload map[string]any) (out map[string]any, erased, replaced []string) {
	out = payload
	if d == nil {
		return out, nil, nil
	}
	src := &shapedPayload{raw: payload}
	for i := range d.masks {
		r := &d.masks[i]
		var named []string
		out, named = r.apply(out, src)
		if r.Replace {
			replaced = append(replaced, named...)
		} else {
			erased = append(erased, named...)
		}
	}
	return out, erased, replaced
}

// Masks returns the mask rules in order.
func (d *DecisionLog) Masks() []MaskRule {
	if d == nil {
		return nil
	}
	return slices.Clone(d.masks)
}

// compileDecisionLog compiles the one decision_log section of the directory, nil when
// there is none.
func (l *loader) compileDecisionLog() *DecisionLog {
	var out *DecisionLog
	var from document
	for _, d := range l.docs {
		n, key := child(d.root, "decision_log")
		if n == nil || !d.usable("decision_log") {
			continue
		}
		if out != nil {
			l.errs = append(l.errs, d.src.Errorf(diag.KindDecisionLog, key, "decision_log", "decision_log is already configured in %s", from.src.Name))
			continue
		}
		out, from = &DecisionLog{masks: l.masks(d, get(n, "mask")), drops: l.drops(d, get(n, "drop"))}, d
	}
	return out
}

func (l *loader) masks(d document, list *yaml.Node) []MaskRule {
	var out []MaskRule
	for i, n := range contentOf(list) {
		field := "decision_log.mask[" + strconv.Itoa(i) + "]"
		rule := MaskRule{}
		at := n
		if n.Kind == yaml.MappingNode {
			at, field = get(n, "path"), field+".path"
			rule.Replace = true
			if err := get(n, "value").Decode(&rule.Value); err != nil {
				l.errs = append(l.errs, d.src.Errorf(diag.KindDecisionLog, get(n, "value"), field, "%v", err))
				continue
			}
		}
		path, err := ParseLogPath(at.Value)
		if err != nil {
			l.errs = append(l.errs, d.src.Errorf(diag.KindDecisionLog, at, field, "%v", err))
			continue
		}
		rule.Path = path
		out = append(out, rule)
	}
	return out
}

func (l *loader) drops(d document, list *yaml.Node) []DropRule {
	var out []DropRule
	for i, n := range contentOf(list) {
		var r DropRule
		for j := 0; j+1 < len(n.Content); j += 2 {
			k, v := n.Content[j], n.Content[j+1]
			values := l.dropValues(d, k.Value, v, "decision_log.drop["+strconv.Itoa(i)+"]."+k.Value)
			switch k.Value {
			case "kind":
				r.Kind = values
			case "stage":
				r.Stage = values
			case "operation":
				r.Operation = values
			case "outcome":
				r.Outcome = values
			case "cause":
				r.Cause = values
			}
		}
		out = append(out, r)
	}
	return out
}

// dropValues returns the values a drop rule's field key matches, reporting each that
// no event can have.
func (l *loader) dropValues(d document, key string, v *yaml.Node, field string) []string {
	nodes := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		nodes = v.Content
	}
	known := dropVocabulary[key]
	var out []string
	for _, n := range nodes {
		if !slices.Contains(known, n.Value) {
			l.errs = append(l.errs, d.src.Errorf(diag.KindDecisionLog, n, field, "%s %q: no decision event has it (known: %s)", key, n.Value, strings.Join(known, ", ")))
			continue
		}
		out = append(out, n.Value)
	}
	return out
}

// dropVocabulary lists, per drop rule field, the values decision events can have.
var dropVocabulary = map[string][]string{
	"kind":      {EventStage, EventCheck, EventRefusal, EventShadow},
	"stage":     stageNames(),
	"operation": {string(op.Turn), string(op.Inference), string(op.ToolCall)},
	"outcome": append(strs(
		engine.OutcomeContinue, engine.OutcomeShortCircuit, engine.OutcomeHookContract, engine.OutcomeAccepted,
		engine.OutcomeRejected, engine.OutcomeInvalidPlan, engine.OutcomeReplayed, engine.OutcomeCompleted,
		engine.OutcomePanic, engine.OutcomeAllowed, engine.OutcomeDenied, engine.OutcomeGuardError,
		engine.OutcomeInvalidCall),
		// a refused call's outcome is its refusal code
		strs(engine.RefusalCodes...)...),
	"cause": strs(
		engine.CausePolicyDenied, engine.CauseEvaluationError, engine.CauseTimeout, engine.CauseInvalidPlan,
		engine.CauseInvalidType, engine.CauseCloneFailed, engine.CauseHookError, engine.CausePanic,
		engine.CauseContractError, engine.CauseGuardDenied, engine.CauseGuardError, engine.CauseBindingDenied),
}

func stageNames() []string {
	out := make([]string, len(engine.Stages))
	for i, s := range engine.Stages {
		out[i] = string(s)
	}
	return out
}

func strs[S ~string](v ...S) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = string(s)
	}
	return out
}
