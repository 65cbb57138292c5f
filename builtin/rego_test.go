package builtin_test

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/policy"
)

// testPolicies are Rego modules beside the repository's policies, for decision
// documents the allow-list never produces.
var testPolicies = map[string]string{
	// rewrite drops news steps and denies nothing.
	"policies/test/rewrite.rego": `package test.rewrite

deny contains "too many steps" if count(input.plan.steps) > 10

plan := object.union(input.plan, {"steps": [s | some s in input.plan.steps; s.metadata.capability != "news"]})
`,
	// bad_rewrite returns a plan naming an agent the catalog does not know.
	"policies/test/bad_rewrite.rego": `package test.bad_rewrite

deny := set()

plan := object.union(input.plan, {"steps": [object.union(input.plan.steps[0], {"agent_name": "ghost"})]})
`,
	// undef's decision is defined only for a metadata flag nobody sets.
	"policies/test/undef.rego": `package test.undef

decision := {"deny": set()} if input.metadata.never
`,
	// shape's deny is not a collection.
	"policies/test/shape.rego": `package test.shape

decision := {"deny": "nope"}
`,
	// echo denies with the input it was given, to show what the action sends.
	"policies/test/echo.rego": `package test.echo

deny contains {"code": "echo", "message": msg} if {
	msg := sprintf("phase=%v request=%v tenant=%v rag=%v steps=%v", [
		input.phase, input.request, input.metadata.tenant,
		input.enrichments.rag_context, count(input.plan.steps),
	])
}
`,
}

// slackRegoTimeout lifts the 100ms default evaluation deadline, so a loaded machine (or
// the race detector) cannot turn a slow evaluation into a spurious failure.
const slackRegoTimeout = "settings: {rego_timeout: 10s}\n"

// regoConfig returns a config directory with the catalog, the repository's policies,
// the test policies, the allow-list and a hooks section.
func regoConfig(hookSection string, extra map[string]string) map[string]string {
	files := map[string]string{
		"hooks/plan.yaml":            hooks(slackRegoTimeout, catalogYAML, hookSection),
		"data/agentd/allowlist.json": allowListJSON,
	}
	maps.Copy(files, repoPolicies())
	maps.Copy(files, testPolicies)
	maps.Copy(files, extra)
	return files
}

// requiredRego is a hooks section with one required rego hook on query.
func requiredRego(query string) string {
	return `hooks:
  - name: allowed-operations
    stage: after_planning
    required: true
    steps:
      - rego: {query: ` + query + `}
`
}

// optionalRego is a hooks section with one optional rego hook on query.
func optionalRego(query string) string {
	return `hooks:
  - name: review
    stage: after_planning
    steps:
      - rego: {query: ` + query + `}
`
}

func TestRego_AllowedPlan(t *testing.T) {
	gen := load(t, regoConfig(requiredRego("data.agentd.plan"), nil))
	plan := quotePlan(3)
	pristine := quotePlan(3)
	got, invs, err := runAfter(t, gen, &engine.PipelineContext{Request: "quotes"}, plan)
	if err != nil {
		t.Fatalf("AfterPlanning: %v", err)
	}
	if !reflect.DeepEqual(got, pristine) || !reflect.DeepEqual(plan, pristine) {
		t.Errorf("AfterPlanning = %+v, want the plan unchanged", got)
	}
	wantInvocations(t, invs, 1)
	wantInvocation(t, invs[0], "allowed-operations", engine.InvocationSucceeded, engine.ReasonAccepted, "")
	if invs[0].Decision.FailurePolicy != engine.FailClosed || invs[0].PlanPhase != 1 {
		t.Errorf("invocation = %+v, want fail_closed in plan phase 1", invs[0])
	}
}

func TestRego_RejectedPlan(t *testing.T) {
	type violation struct{ code, step string }
	tests := []struct {
		name  string
		edit  func(p *engine.RoutingPlan)
		extra map[string]string
		want  []violation
	}{
		{
			name: "capability not allowed",
			edit: func(p *engine.RoutingPlan) { p.Steps[1].Metadata["capability"] = "execute_trade" },
			want: []violation{{"capability_not_allowed", "step-2"}},
		},
		{
			name: "namespace and agent not allowed",
			edit: func(p *engine.RoutingPlan) {
				p.Steps[0].Namespace = "other-tools"
				p.Steps[2].AgentName = "bond-service"
			},
			want: []violation{{"namespace_not_allowed", "step-1"}, {"agent_not_allowed", "step-3"}},
		},
		{
			name: "missing capability",
			edit: func(p *engine.RoutingPlan) { delete(p.Steps[2].Metadata, "capability") },
			want: []violation{{"missing_capability", "step-3"}},
		},
		{
			name:  "a plan-level violation has no step id",
			edit:  func(*engine.RoutingPlan) {},
			extra: map[string]string{"data/agentd/limits.json": `{"limits": {"max_steps": 2}}`},
			want:  []violation{{"too_many_steps", ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, required := range []bool{true, false} {
				section, hook := optionalRego("data.agentd.plan"), "review"
				if required {
					section, hook = requiredRego("data.agentd.plan"), "allowed-operations"
				}
				gen := load(t, regoConfig(section, tt.extra))
				plan := quotePlan(3)
				tt.edit(plan)
				got, invs, err := runAfter(t, gen, &engine.PipelineContext{Request: "quotes"}, plan)

				rejection, ok := builtin.AsPlanRejection(err)
				if required {
					// Fail closed: no plan, and the rejection is the cause of the
					// required hook's error.
					rerr, isRequired := engine.AsRequiredAfterPlanningError(err)
					if got != nil || !isRequired || !ok {
						t.Fatalf("required: AfterPlanning = %v, %v; want no plan and a RequiredAfterPlanningError caused by a PlanRejection", got, err)
					}
					if rerr.Hook != hook || rerr.Reason != engine.ReasonHookError || rerr.Cause != error(rejection) {
						t.Errorf("required error = %+v, want hook %s, reason hook_error, cause the rejection", rerr, hook)
					}
					wantPrefix := `required after-planning hook "allowed-operations" failed: plan denied by data.agentd.plan: `
					if !strings.HasPrefix(err.Error(), wantPrefix) {
						t.Errorf("error = %q, want prefix %q", err, wantPrefix)
					}
				} else {
					// Fail open: the previous plan goes on.
					if err != nil || got != plan {
						t.Fatalf("optional: AfterPlanning = %p, %v; want the incoming plan %p", got, err, plan)
					}
					rejection = nil
				}
				wantInvocations(t, invs, 1)
				wantInvocation(t, invs[0], hook, engine.InvocationFailed, engine.ReasonHookError, "plan denied by data.agentd.plan: ")
				if !required {
					continue
				}
				var gotV []violation
				for _, v := range rejection.Violations {
					gotV = append(gotV, violation{v.Code, v.StepID})
					if v.Message == "" {
						t.Errorf("violation %+v has no message", v)
					}
				}
				if !reflect.DeepEqual(gotV, tt.want) {
					t.Errorf("violations = %v, want %v", gotV, tt.want)
				}
				if rejection.Query != "data.agentd.plan" {
					t.Errorf("rejection query = %q", rejection.Query)
				}
			}
		})
	}
}

// The input is {plan, phase, request, metadata, enrichments}; a string deny entry has
// code "denied".
func TestRego_Input(t *testing.T) {
	gen := load(t, regoConfig(requiredRego("data.test.echo"), nil))
	plan := quotePlan(2)
	plan.PhaseNumber = 2
	pctx := &engine.PipelineContext{
		Request:     "quotes",
		Metadata:    map[string]any{"tenant": "acme"},
		Enrichments: map[string]any{"rag_context": "docs"},
	}
	_, _, err := runAfter(t, gen, pctx, plan)
	rejection, ok := builtin.AsPlanRejection(err)
	if !ok || len(rejection.Violations) != 1 {
		t.Fatalf("AfterPlanning error = %v, want one echo violation", err)
	}
	want := policy.Violation{Code: "echo", Message: "phase=2 request=quotes tenant=acme rag=docs steps=2"}
	if rejection.Violations[0] != want {
		t.Errorf("violation = %+v, want %+v", rejection.Violations[0], want)
	}
}

// A decision document with a plan replaces the plan; the replacement is revalidated.
func TestRego_DecisionPlanRewritesPlan(t *testing.T) {
	gen := load(t, regoConfig(requiredRego("data.test.rewrite"), nil))
	plan := quotePlan(3)
	plan.Steps[2].Metadata["capability"] = "news"
	got, invs, err := runAfter(t, gen, &engine.PipelineContext{Request: "quotes"}, plan)
	if err != nil {
		t.Fatalf("AfterPlanning: %v", err)
	}
	if ids := stepIDs(got); !reflect.DeepEqual(ids, []string{"step-1", "step-2"}) {
		t.Errorf("steps = %v, want the news step removed", ids)
	}
	if want := quotePlan(2); !reflect.DeepEqual(got.Steps, want.Steps) || !got.CreatedAt.Equal(want.CreatedAt) || got.PlanID != want.PlanID {
		t.Errorf("rewritten plan = %+v, want the first two steps unchanged", got)
	}
	if len(plan.Steps) != 3 {
		t.Errorf("the incoming plan was mutated")
	}
	wantInvocations(t, invs, 1)
	wantInvocation(t, invs[0], "allowed-operations", engine.InvocationSucceeded, engine.ReasonAccepted, "")

	// A replacement that fails plan validation is rejected like any other failure.
	gen = load(t, regoConfig(requiredRego("data.test.bad_rewrite"), nil))
	got, invs, err = runAfter(t, gen, &engine.PipelineContext{}, quotePlan(1))
	rerr, ok := engine.AsRequiredAfterPlanningError(err)
	if got != nil || !ok || rerr.Reason != engine.ReasonInvalidPlan {
		t.Fatalf("AfterPlanning = %v, %v; want a required error with reason invalid_plan", got, err)
	}
	wantInvocation(t, invs[0], "allowed-operations", engine.InvocationFailed, engine.ReasonInvalidPlan, "ghost")
}

// An undefined or malformed decision fails closed for the required hook, and is a hook
// error (the plan goes on) for an optional one.
func TestRego_BadDecisionFailsClosed(t *testing.T) {
	tests := []struct {
		query  string
		reason error
	}{
		{"data.test.undef.decision", policy.ErrUndefined},
		{"data.test.shape.decision", policy.ErrShape},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			gen := load(t, regoConfig(requiredRego(tt.query), nil))
			got, invs, err := runAfter(t, gen, &engine.PipelineContext{}, quotePlan(1))
			rerr, ok := engine.AsRequiredAfterPlanningError(err)
			if got != nil || !ok || !errors.Is(err, tt.reason) {
				t.Fatalf("AfterPlanning = %v, %v; want a required error wrapping %v", got, err, tt.reason)
			}
			var ee *policy.EvalError
			if !errors.As(rerr.Cause, &ee) || ee.Query != tt.query {
				t.Errorf("cause = %#v, want a *policy.EvalError for %s", rerr.Cause, tt.query)
			}
			if _, isRejection := builtin.AsPlanRejection(err); isRejection {
				t.Errorf("a broken decision must not look like a policy rejection")
			}
			wantInvocation(t, invs[0], "allowed-operations", engine.InvocationFailed, engine.ReasonHookError, tt.reason.Error())
			if d := invs[0].Decision; d.FailurePolicy != engine.FailClosed || d.Action != engine.ActionTerminate {
				t.Errorf("decision = %+v, want fail_closed/terminate", d)
			}

			gen = load(t, regoConfig(optionalRego(tt.query), nil))
			plan := quotePlan(1)
			got, invs, err = runAfter(t, gen, &engine.PipelineContext{}, plan)
			if err != nil || got != plan {
				t.Fatalf("optional: AfterPlanning = %v, %v; want the incoming plan", got, err)
			}
			wantInvocation(t, invs[0], "review", engine.InvocationFailed, engine.ReasonHookError, tt.reason.Error())
		})
	}
}

// A rego query that names nothing, or with no policies loaded, is a load error at the
// query.
func TestRego_UndefinedQueryIsALoadError(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"unknown package", regoConfig(requiredRego("data.agentd.nope"), nil), "names no package, rule or data"},
		{"no policies", map[string]string{"hooks/plan.yaml": hooks(requiredRego("data.agentd.plan"))}, "(no packages are loaded)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load(writeConfig(t, tt.files), config.Options{})
			list := wantLoadErrors(t, err, "undefined_query")
			if e := list[0]; e.File != "hooks/plan.yaml" || e.Line == 0 || !strings.Contains(e.Message, tt.want) {
				t.Errorf("error = %v, want one at the query in hooks/plan.yaml mentioning %q", e, tt.want)
			}
		})
	}
}

func TestRegoMemo_OffByParam(t *testing.T) {
	for _, tc := range []struct{ param, note string }{
		{"false", "rego data.agentd.plan: decisions not memoized (memo: false)"},
		{"True", "rego data.agentd.plan: decisions memoized on input.plan.steps (size), input.plan.steps[*].agent_name, " +
			"input.plan.steps[*].metadata.capability, input.plan.steps[*].namespace, input.plan.steps[*].step_id; " +
			"those allowing the plan on input.plan.steps (size), input.plan.steps[*].agent_name, input.plan.steps[*].metadata.capability, " +
			"input.plan.steps[*].namespace, input.plan.steps[*].step_id (type)"},
	} {
		files := map[string]string{
			"hooks/plan.yaml": hooks(`hooks:
  - name: allowed-operations
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.agentd.plan, memo: ` + tc.param + `}
`),
			"data/agentd/allowlist.json": allowListJSON,
		}
		maps.Copy(files, repoPolicies())
		gen := load(t, files)
		if got, want := gen.Hooks[0].Notes, []string{tc.note}; !reflect.DeepEqual(got, want) {
			t.Fatalf("memo: %s: notes = %q, want %q", tc.param, got, want)
		}
		pctx := &engine.PipelineContext{Request: "quote", Metadata: map[string]any{}, Enrichments: map[string]any{}}
		if got, err := gen.Pipeline.AfterPlanning(requestCtx(gen, "r1", noGate), pctx, quotePlan(2), nil, nil); err != nil || len(got.Steps) != 2 {
			t.Fatalf("memo: %s: AfterPlanning = %v, %v", tc.param, got, err)
		}
	}
}
