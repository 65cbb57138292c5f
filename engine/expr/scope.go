package expr

import (
	"strings"

	"github.com/google/cel-go/cel"

	"github.com/agentd-dev/agentd/engine"
)

// Scope names the set of variables an expression may use. The four stage scopes equal the
// engine.Stage spellings.
type Scope string

// Scopes.
const (
	// BeforePlanning: request, metadata, enrichments, now.
	BeforePlanning = Scope(engine.StageBeforePlanning)
	// AfterPlanning adds plan (the JSON-shaped engine.RoutingPlan) and phase (int).
	AfterPlanning = Scope(engine.StageAfterPlanning)
	// AfterExecution adds result (the JSON-shaped engine.ExecutionResult).
	AfterExecution = Scope(engine.StageAfterExecution)
	// AfterSynthesis adds response (string).
	AfterSynthesis = Scope(engine.StageAfterSynthesis)
	// PlanStep is AfterPlanning plus step (one JSON-shaped engine.RoutingStep), for the
	// `where` expressions of plan.remove_steps and plan.set_metadata.
	PlanStep Scope = "plan_step"
	// Guard: call (the JSON-shaped op.Call, with call.labels), labels (list of
	// strings) and history (list of executed steps: step_id, namespace, agent_name,
	// capability, status, labels) from the call's op.Flow, plus request, metadata,
	// enrichments, now.
	Guard Scope = "guard"
	// Label: call (the finished step as a JSON-shaped op.Call) and result (its
	// reported response, dyn), for the when of a HookSet's labels.
	Label Scope = "label"
)

// Variable names.
const (
	varRequest     = "request"
	varMetadata    = "metadata"
	varEnrichments = "enrichments"
	varNow         = "now"
	varPlan        = "plan"
	varPhase       = "phase"
	varStep        = "step"
	varResult      = "result"
	varResponse    = "response"
	varCall        = "call"
	varLabels      = "labels"
	varHistory     = "history"
)

type variable struct {
	name string
	typ  *cel.Type
}

var jsonObject = cel.MapType(cel.StringType, cel.DynType)

var commonVars = []variable{
	{varRequest, cel.StringType},
	{varMetadata, jsonObject},
	{varEnrichments, jsonObject},
	{varNow, cel.TimestampType},
}

// scopeTable lists every scope with the variables it adds to commonVars, in the order
// scopes are named in messages.
var scopeTable = []struct {
	scope Scope
	vars  []variable
}{
	{BeforePlanning, nil},
	{AfterPlanning, []variable{{varPlan, cel.DynType}, {varPhase, cel.IntType}}},
	{AfterExecution, []variable{{varResult, cel.DynType}}},
	{AfterSynthesis, []variable{{varResponse, cel.StringType}}},
	{PlanStep, []variable{{varPlan, cel.DynType}, {varPhase, cel.IntType}, {varStep, cel.DynType}}},
	{Guard, []variable{{varCall, jsonObject}, {varLabels, cel.ListType(cel.StringType)}, {varHistory, cel.ListType(jsonObject)}}},
	{Label, []variable{{varCall, jsonObject}, {varResult, cel.DynType}}},
}

// scopes returns every scope: the four stages, then PlanStep and Guard.
func scopes() []Scope {
	out := make([]Scope, len(scopeTable))
	for i, s := range scopeTable {
		out[i] = s.scope
	}
	return out
}

// variables returns the names of the variables declared in s, or nil for an unknown
// scope.
func (s Scope) variables() []string {
	for _, row := range scopeTable {
		if row.scope != s {
			continue
		}
		out := make([]string, 0, len(commonVars)+len(row.vars))
		for _, v := range append(commonVars[:len(commonVars):len(commonVars)], row.vars...) {
			out = append(out, v.name)
		}
		return out
	}
	return nil
}

// declares reports whether scope s declares the variable name.
func (s Scope) declares(name string) bool {
	for _, v := range s.variables() {
		if v == name {
			return true
		}
	}
	return false
}

// scopesDeclaring lists, comma-separated, the scopes that declare name.
func scopesDeclaring(name string) string {
	var in []string
	for _, row := range scopeTable {
		if row.scope.declares(name) {
			in = append(in, string(row.scope))
		}
	}
	return strings.Join(in, ", ")
}
