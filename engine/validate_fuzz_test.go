package engine

import (
	"encoding/json"
	"testing"
)

// vpCodeRule maps every PlanError code to the rule that may report it.
var vpCodeRule = map[PlanCode]int{
	PlanCodeNilPlan: 1, PlanCodeEmptyPlan: 1,
	PlanCodeUnknownAgent:      2,
	PlanCodeUnknownCapability: 3,
	PlanCodeMissingStepID:     4, PlanCodeDuplicateStepID: 4, PlanCodeUnknownDependency: 4, PlanCodeDependencyCycle: 4,
	PlanCodeMalformedReference: 5, PlanCodeUnscannableParameters: 5,
	PlanCodeSelfReference: 6, PlanCodeUndeclaredDependency: 6, PlanCodeUndeclaredImplicitDependency: 6,
	PlanCodeInvalidImplicitDependency: 6,
	PlanCodeUnknownReferenceTarget:    7, PlanCodeUnknownReturnField: 7,
	PlanCodeRepeatedStepID: 8,
}

// FuzzValidatePlan decodes plan JSON and validates it against a fixed catalog (and, for
// phase_number >= 2, fixed prior steps). Validation must not panic, must return either
// nil or a *PlanError with a known code for its rule, must be deterministic and must
// leave the plan unchanged.
func FuzzValidatePlan(f *testing.F) {
	for _, seed := range []string{
		`{"plan_id":"p","steps":[]}`,
		`{"plan_id":"p","steps":[],"terminal":false}`,
		`{"plan_id":"p","steps":[],"terminal":false,"needs_user_input":{"question":"Which symbol?"}}`,
		`{"plan_id":"p","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools",` +
			`"metadata":{"capability":"stock_quote","parameters":{"symbol":"AAPL"}}},` +
			`{"step_id":"step-2","agent_name":"stock-service","namespace":"demo-tools","depends_on":["step-1"],` +
			`"metadata":{"capability":"execute_trade","parameters":{"price":"{{step-1.response.data.price}}","legs":[{"q":"{{step-1.response.data.currency}}"}]}}}]}`,
		`{"steps":[{"step_id":"step-1","agent_name":"nobody","namespace":"demo-tools"}]}`,
		`{"steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","metadata":{"capability":"teleport"}}]}`,
		`{"steps":[{"step_id":"a","depends_on":["b"]},{"step_id":"b","depends_on":["a"]},{"step_id":"a"}]}`,
		`{"steps":[{"step_id":"step-1","metadata":{"parameters":{"x":"{{step-1}}","y":["{{ step-2.a }}"]}}}]}`,
		`{"steps":[{"step_id":"step-2","metadata":{"parameters":"{{step-2.response}}"}}]}`,
		`{"steps":[{"step_id":"step-3","agent_name":"stock-service","namespace":"demo-tools","metadata":{"capability":"execute_trade",` +
			`"parameters":{"p":"{{step-9.response.data.price}}"}}}]}`,
		`{"phase_number":2,"steps":[{"step_id":"step-3","agent_name":"stock-service","namespace":"demo-tools","implicit_deps":["step-1"],` +
			`"metadata":{"capability":"execute_trade","parameters":{"p":"{{step-1.response.data.volume}}"}}}]}`,
		`{"phase_number":2,"steps":[{"step_id":"step-1","implicit_deps":["step-2","step-3"]}]}`,
		`{"phase_number":3,"steps":[{"step_id":"step-2","metadata":{"capability":7,"parameters":[{"a":{"b":"{{step-1.x}}"}}]}}]}`,
	} {
		f.Add([]byte(seed))
	}
	catalog := vpCatalog(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var plan RoutingPlan
		if err := json.Unmarshal(data, &plan); err != nil {
			return
		}
		var prior []RoutingStep
		if plan.PhaseNumber >= 2 {
			prior = vpPrior()
		}
		before, err := json.Marshal(&plan)
		if err != nil {
			return
		}
		first := ValidatePlan(&plan, catalog, prior)
		second := ValidatePlan(&plan, catalog, prior)
		after, _ := json.Marshal(&plan)
		if string(before) != string(after) {
			t.Fatalf("plan mutated:\n%s\n%s", before, after)
		}
		if (first == nil) != (second == nil) || (first != nil && first.Error() != second.Error()) {
			t.Fatalf("not deterministic: %v then %v", first, second)
		}
		if first == nil {
			return
		}
		pe, ok := AsPlanError(first)
		if !ok {
			t.Fatalf("error %T is not a *PlanError: %v", first, first)
		}
		if rule, known := vpCodeRule[pe.Code]; !known || rule != pe.Rule {
			t.Fatalf("code %q reported under rule %d", pe.Code, pe.Rule)
		}
		if pe.StepID != "" && !vpHasStep(plan.Steps, pe.StepID) {
			t.Fatalf("error names step %q, which is not in the plan", pe.StepID)
		}
	})
}

func vpHasStep(steps []RoutingStep, id string) bool {
	for i := range steps {
		if steps[i].StepID == id {
			return true
		}
	}
	return false
}
