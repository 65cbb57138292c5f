package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/ref"
)

// BindingMode says how tool calls are bound to the request's accepted plan
// (docs/semantics.md §8.9).
type BindingMode string

// Binding modes.
const (
	// BindingStrict allows a tool_call only for a step of an accepted phase with the
	// same namespace, agent and capability and the same parameters.
	BindingStrict BindingMode = "strict"
	// BindingIdentity checks namespace, agent and capability only.
	BindingIdentity BindingMode = "identity"
	// BindingOff binds nothing: the guards alone decide (for orchestrators that plan
	// nothing).
	BindingOff BindingMode = "off"
)

// DefaultBinding is the binding of a generation that does not choose one.
const DefaultBinding = BindingStrict

// Denial codes of plan binding.
const (
	CodeNotInAcceptedPlan   = "not_in_accepted_plan"
	CodePlanMismatch        = "plan_mismatch"
	CodeStepAlreadyExecuted = "step_already_executed"
)

// BindingGuard is the guard name operation records give a binding denial.
const BindingGuard = "plan_binding"

// bind checks a tool_call against the request's accepted plan and returns nil, or the
// denial with one of the binding codes. st is nil when the request is unknown.
//
// The call must name a step of an accepted phase (not_in_accepted_plan) with the same
// namespace, agent and capability and, in strict mode, the same parameters
// (plan_mismatch; see matchValue). A step runs once: a step whose check was allowed
// before is denied (step_already_executed) unless its finish reported a retryable
// failure.
func bind(mode BindingMode, st *RequestState, call *op.Call) *op.Denial {
	if st == nil || st.Phase == 0 {
		return &op.Denial{Code: CodeNotInAcceptedPlan, Reason: "the request has no accepted plan"}
	}
	step := acceptedStep(st, call.StepID)
	if step == nil {
		return &op.Denial{Code: CodeNotInAcceptedPlan, Reason: truncate(fmt.Sprintf("step %q is not a step of an accepted phase", call.StepID))}
	}
	for _, f := range [...]struct{ name, want, got string }{
		{"namespace", step.Namespace, call.Namespace},
		{"agent_name", step.AgentName, call.AgentName},
		{"capability", step.Capability(), call.Capability},
	} {
		if f.want != f.got {
			return &op.Denial{Code: CodePlanMismatch, Reason: truncate(fmt.Sprintf("step %q: %s %q differs from the accepted plan's %q", call.StepID, f.name, f.got, f.want))}
		}
	}
	if mode == BindingStrict {
		if where := matchParams(step.Parameters(), call.Parameters, st.Runs); where != "" {
			return &op.Denial{Code: CodePlanMismatch, Reason: truncate(fmt.Sprintf("step %q: parameters%s differ from the accepted plan", call.StepID, where))}
		}
	}
	if run := st.Runs[call.StepID]; run != nil && !(run.Status == RunFailed && run.Retryable) {
		return &op.Denial{Code: CodeStepAlreadyExecuted, Reason: truncate(fmt.Sprintf("step %q already ran (%s)", call.StepID, run.Status))}
	}
	return nil
}

// truncate bounds a binding reason to what a denial may carry.
func truncate(s string) string {
	if len(s) <= op.MaxDenialReasonLen {
		return s
	}
	cut := op.MaxDenialReasonLen - len("…")
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// acceptedStep returns the accepted step with id, nil when none.
func acceptedStep(st *RequestState, id string) *RoutingStep {
	for i := range st.PriorSteps {
		if st.PriorSteps[i].StepID == id {
			return &st.PriorSteps[i]
		}
	}
	return nil
}

// matchParams compares a call's parameters with the accepted step's and returns ""
// when they match, else where they first differ (".amount", "[2]", " (extra key
// \"x\")"). Values compare as JSON after canonicalization (numbers by value, objects
// by key). A string of the accepted step holding `{{step-…}}` references matches the
// call's string with each reference replaced by the referenced step's reported value
// when runs knows it, or by any text when it does not (the orchestrator resolved it);
// the template itself, unresolved, matches too (the executor resolves it). A key on one
// side only is a mismatch.
func matchParams(accepted, got map[string]any, runs map[string]*StepRun) string {
	if matchValue(accepted, got, runs) == "" {
		return "" // equal as they are, so equal as JSON: the common case, without copies
	}
	return matchValue(normalize(accepted), normalize(got), runs)
}

func matchValue(want, got any, runs map[string]*StepRun) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return " (not an object)"
		}
		return matchMembers(w, g, runs)
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return " (not the same list)"
		}
		for i := range w {
			if where := matchValue(w[i], g[i], runs); where != "" {
				return fmt.Sprintf("[%d]%s", i, where)
			}
		}
		return ""
	case string:
		if refs, err := ref.Scan(w); err == nil && len(refs) > 0 {
			if got == w || matchTemplate(w, refs, got, runs) {
				return ""
			}
			return " (does not match the referenced results)"
		}
		if g, ok := got.(string); ok && g == w {
			return ""
		}
	case float64:
		if g, ok := got.(float64); ok && g == w {
			return ""
		}
	}
	if !reflect.DeepEqual(want, got) {
		return " (different value)"
	}
	return ""
}

// matchMembers compares two objects and returns where they first differ: an extra key
// of got (the first in key order), else the first key of want, in key order, that got
// lacks or whose values differ. Each pair of values is compared at most once and only
// keys before the first difference found so far are looked at, so a mismatch costs
// the size of the values, whatever their nesting.
func matchMembers(want, got map[string]any, runs map[string]*StepRun) string {
	extra, hasExtra := "", false
	for k := range got {
		if _, ok := want[k]; !ok && (!hasExtra || k < extra) {
			extra, hasExtra = k, true
		}
	}
	if hasExtra {
		return fmt.Sprintf(" (extra key %q)", extra)
	}
	first, where := "", ""
	for k, wv := range want {
		if where != "" && k > first {
			continue
		}
		gv, ok := got[k]
		if !ok {
			first, where = k, fmt.Sprintf(" (missing key %q)", k)
			continue
		}
		if w := matchValue(wv, gv, runs); w != "" {
			first, where = k, "."+k+w
		}
	}
	return where
}

// matchTemplate matches got against a string with step references: a string that is
// exactly one reference matches the referenced value itself (of any JSON type); any
// other template matches a string whose literal parts are the template's and whose
// references are the referenced values as text.
func matchTemplate(tmpl string, refs []Ref, got any, runs map[string]*StepRun) bool {
	if len(refs) == 1 && refs[0].Raw == tmpl {
		v, known := resolve(refs[0], runs)
		return !known || reflect.DeepEqual(normalize(v), got)
	}
	s, ok := got.(string)
	if !ok {
		return false
	}
	var pattern strings.Builder
	pattern.WriteString("^")
	at := 0
	for _, r := range refs {
		pattern.WriteString(regexp.QuoteMeta(tmpl[at:r.Offset]))
		if v, known := resolve(r, runs); known {
			pattern.WriteString(regexp.QuoteMeta(text(v)))
		} else {
			pattern.WriteString("(?s:.*)")
		}
		at = r.Offset + len(r.Raw)
	}
	pattern.WriteString(regexp.QuoteMeta(tmpl[at:]) + "$")
	re, err := regexp.Compile(pattern.String())
	return err == nil && re.MatchString(s)
}

// Ref is a step reference (see package ref).
type Ref = ref.Ref

// resolve returns the value a reference names when the referenced step's response is
// known: {{<step>.response.<path>}} resolves into the reported response.
func resolve(r Ref, runs map[string]*StepRun) (any, bool) {
	run := runs[r.StepID]
	if run == nil || run.Response == nil || len(r.Path) == 0 || r.Path[0] != "response" {
		return nil, false
	}
	v := normalize(run.Response)
	for _, seg := range r.Path[1:] {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return v, true
}

// text renders a resolved value the way it reads inside a string.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// normalize returns v as encoding/json would decode its encoding: objects as
// map[string]any, lists as []any, numbers as float64. A value that already has that
// shape (what a JSON body decodes to) is returned as it is, without copying. Values
// that do not encode are returned as they are (and then match nothing but themselves).
func normalize(v any) any {
	if decoded(v, 0) {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// decoded reports whether v holds only what encoding/json decodes into an any.
func decoded(v any, depth int) bool {
	if depth > MaxCloneDepth {
		return false
	}
	switch t := v.(type) {
	case nil, string, bool, float64:
		return true
	case map[string]any:
		for _, e := range t {
			if !decoded(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range t {
			if !decoded(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// stepObject is a step as guards see it beside the call: its JSON form as
// encoding/json decodes it (metadata shared when it already has that form; guards get
// copies of the call).
func stepObject(s *RoutingStep) map[string]any {
	m := make(map[string]any, 7)
	m["step_id"], m["agent_name"], m["namespace"], m["instruction"] = s.StepID, s.AgentName, s.Namespace, s.Instruction
	if len(s.DependsOn) > 0 {
		m["depends_on"] = anyStrings(s.DependsOn)
	}
	if len(s.ImplicitDeps) > 0 {
		m["implicit_deps"] = anyStrings(s.ImplicitDeps)
	}
	if len(s.Metadata) > 0 {
		m["metadata"] = normalize(s.Metadata)
	}
	return m
}

func anyStrings(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
