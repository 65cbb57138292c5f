package config_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/op"
)

const flowHooks = `
labels:
  - label: secret
    when: "call.capability == 'read_secret'"
  - label: untrusted
    when: "call.capability == 'fetch_url'"
  - label: confidential
    when: "result.classification == 'confidential'"
guards:
  policy_revision: r1
  rules:
    - name: no-secret-egress
      operation: tool_call
      deny_if: "'secret' in labels && call.capability == 'send_email' && !string(call.parameters.to).endsWith('@acme.example')"
      code: secret_egress
      reason: a request that has read a secret mails only inside the company
    - name: no-tainted-arguments
      operation: tool_call
      deny_if: "'untrusted' in call.labels && call.capability == 'run_shell'"
      code: tainted_arguments
      reason: untrusted content does not reach a shell
    - name: no-deploy-after-fetch
      operation: tool_call
      deny_if: "call.capability == 'deploy' && history.exists(h, h.capability == 'fetch_url' && h.status == 'succeeded')"
      code: deploy_after_fetch
      reason: no deploy after fetching from the web
    - name: rego-confidential
      operation: tool_call
      rego: {query: data.agentd.guard}
`

const flowPolicy = `package agentd.guard

deny contains {"code": "confidential_upload", "reason": "confidential data stays"} if {
	"confidential" in input.labels
	input.call.capability == "upload"
}

deny contains {"code": "tainted_write", "reason": "no write of untrusted content"} if {
	"untrusted" in input.call.labels
	input.call.capability == "write_file"
	count(input.history) > 0
}
`

const flowReview = `package agentd.plan

deny contains "a plan after untrusted content sends no mail" if {
	"untrusted" in input.labels
	some s in input.plan.steps
	s.metadata.capability == "send_email"
}

deny contains "history must be ordered" if {
	count(input.history) > 0
	input.history[0].step_id != "step-1"
}
`

func loadFlow(t *testing.T) *config.Generation {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"hooks/flow.yaml": hookSet("flow", flowHooks+`hooks:
  - name: review
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.agentd.plan}
`),
		"policies/guard.rego": flowPolicy,
		"policies/plan.rego":  flowReview,
	})
	return mustLoad(t, dir)
}

// The labels section attaches each label whose when holds of the step and its result;
// a when that fails to evaluate attaches its label (fail closed).
func TestLoad_LabelsAttachByCallAndResult(t *testing.T) {
	gen := loadFlow(t)
	if gen.Labels == nil || len(gen.LabelRules) != 3 || gen.LabelRules[2].Label != "confidential" || gen.LabelRules[2].Line != 9 ||
		gen.LabelRules[0].When != "call.capability == 'read_secret'" {
		t.Fatalf("labeler %v, rules %+v", gen.Labels, gen.LabelRules)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		capability string
		result     any
		want       []string
	}{
		{"read_secret", map[string]any{"classification": "public"}, []string{"secret"}},
		{"fetch_url", map[string]any{"classification": "public"}, []string{"untrusted"}},
		{"fetch_url", map[string]any{"classification": "confidential"}, []string{"untrusted", "confidential"}},
		{"quote", map[string]any{"classification": "public"}, nil},
		{"quote", map[string]any{"price": 1.0}, []string{"confidential"}}, // no such key: an error attaches it
		{"quote", nil, []string{"confidential"}},
	} {
		call := &op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-1", AgentName: "a", Capability: tc.capability}
		if got := gen.Labels.Labels(ctx, call, tc.result); !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: labels %v, want %v", tc.capability, tc.result, got, tc.want)
		}
	}
}

// Guards read labels, call.labels and history in CEL, input.labels, input.call.labels
// and input.history in Rego; without them nothing is denied.
func TestLoad_GuardsReadTheFlow(t *testing.T) {
	gen := loadFlow(t)
	fetched := []op.HistoryStep{{StepID: "step-1", AgentName: "a", Capability: "fetch_url", Status: "succeeded", Labels: []string{"untrusted"}}}
	for _, tc := range []struct {
		name, capability string
		params           map[string]any
		labels           []string
		flow             *op.Flow
		want             string
	}{
		{"secret mailed out", "send_email", map[string]any{"to": "x@evil.example"}, nil, &op.Flow{Labels: []string{"secret"}}, "secret_egress"},
		{"secret mailed inside", "send_email", map[string]any{"to": "ops@acme.example"}, nil, &op.Flow{Labels: []string{"secret"}}, ""},
		{"mail without a secret", "send_email", map[string]any{"to": "x@evil.example"}, nil, &op.Flow{Labels: []string{"untrusted"}}, ""},
		{"mail without a flow", "send_email", map[string]any{"to": "x@evil.example"}, nil, nil, ""},
		{"untrusted into a shell", "run_shell", nil, []string{"untrusted"}, &op.Flow{Labels: []string{"untrusted"}}, "tainted_arguments"},
		{"shell after untrusted, not by reference", "run_shell", nil, nil, &op.Flow{Labels: []string{"untrusted"}}, ""},
		{"deploy after a fetch", "deploy", nil, nil, &op.Flow{History: fetched}, "deploy_after_fetch"},
		{"deploy after a failed fetch", "deploy", nil, nil, &op.Flow{History: []op.HistoryStep{{StepID: "s", Capability: "fetch_url", Status: "failed"}}}, ""},
		{"rego: confidential upload", "upload", nil, nil, &op.Flow{Labels: []string{"confidential"}}, "confidential_upload"},
		{"rego: upload", "upload", nil, nil, &op.Flow{}, ""},
		{"rego: untrusted write with history", "write_file", nil, []string{"untrusted"}, &op.Flow{History: fetched}, "tainted_write"},
		{"rego: untrusted write without history", "write_file", nil, []string{"untrusted"}, &op.Flow{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, finish, err := gen.Runner.Start(context.Background(), op.Call{
				Operation: op.ToolCall, RequestID: "req-1", StepID: "step-2", Namespace: "ns", AgentName: "a",
				Capability: tc.capability, Parameters: tc.params, Labels: tc.labels, Flow: tc.flow,
			})
			if finish != nil {
				finish(op.Result{})
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("denied: %v", err)
				}
				return
			}
			wantDenial(t, err, tc.want)
		})
	}
}

// The plan review sees the request's labels and history as input.labels and
// input.history (RequestInfo.Flow): a later phase is refused for what an earlier read.
func TestLoad_PlanReviewReadsTheFlow(t *testing.T) {
	gen := loadFlow(t)
	plan := func() *engine.RoutingPlan {
		return &engine.RoutingPlan{PlanID: "p2", PhaseNumber: 2, Steps: []engine.RoutingStep{{StepID: "step-2", AgentName: "a", Namespace: "ns",
			Metadata: map[string]any{"capability": "send_email", "parameters": map[string]any{"to": "x@evil.example"}}}}}
	}
	for _, tc := range []struct {
		name   string
		flow   *engine.Flow
		reject string
	}{
		{"no flow", nil, ""},
		{"a secret", &engine.Flow{Labels: []string{"secret"}, History: []engine.HistoryStep{{StepID: "step-1", Capability: "read_secret", Status: "succeeded"}}}, ""},
		{"untrusted content", &engine.Flow{Labels: []string{"untrusted"}}, "a plan after untrusted content sends no mail"},
		{"history out of order", &engine.Flow{History: []engine.HistoryStep{{StepID: "step-9"}}}, "history must be ordered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := engine.WithRequestInfo(context.Background(), engine.RequestInfo{ID: "r", Generation: gen.ID, Phase: 1, Flow: tc.flow})
			pctx := &engine.PipelineContext{Request: "mail", Metadata: map[string]any{}, Enrichments: map[string]any{}}
			_, err := gen.Pipeline.AfterPlanning(ctx, pctx, plan(), nil, engine.NewTrail())
			if tc.reject == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.reject) {
				t.Fatalf("review = %v, want a rejection naming %q", err, tc.reject)
			}
		})
	}
}

// A config declares at most engine.MaxRequestLabels distinct labels (the bound on a
// request's label set); the extra one is reported where it is declared.
func TestLoad_LabelsAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("labels:\n")
	for i := range engine.MaxRequestLabels + 1 {
		fmt.Fprintf(&b, "  - label: l%d\n    when: \"true\"\n", i)
	}
	b.WriteString("  - label: l0\n    when: \"false\"\n") // a repeated label is one label
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"hooks/x.yaml": hookSet("x", b.String())})
	errs := loadFails(t, dir)
	want := fmt.Sprintf("hooks/x.yaml:%d:12 %s", 5+2*engine.MaxRequestLabels, diag.KindSchema)
	if len(errs) != 1 || position(errs[0]) != want {
		t.Fatalf("errors = %v, want one at %s", errs, want)
	}
}

// Generation.Reads records, per stage (the empty one for the guards), whether a CEL
// expression or Rego query may read the request's flow: labels (CEL labels or
// call.labels, Rego input.labels) and history; a rule reading neither records neither.
func TestLoad_ReadsRecordTheFlow(t *testing.T) {
	for _, tc := range []struct {
		name, guard, rego string
		want              []string // "stage variable", stage "" for the guards
	}{
		{"labels", "'secret' in labels", "", []string{" labels"}},
		{"call.labels", "'secret' in call.labels", "", []string{" labels"}},
		{"history", "history.exists(h, h.capability == 'read_secret')", "", []string{" history"}},
		{"neither", "call.capability == 'send_email'", "", nil},
		{"rego input.labels", "false", `deny contains "x" if "secret" in input.labels`, []string{"after_planning labels"}},
		{"rego input.history", "false", `deny contains "x" if count(input.history) > 3`, []string{"after_planning history"}},
		{"rego plan only", "false", `deny contains "x" if count(input.plan.steps) > 3`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			policy := "package review\n\ndefault allow := false\n\nallow if count(deny) == 0\n"
			if tc.rego == "" {
				tc.rego = `deny contains "x" if input.plan.plan_id == "never"`
			}
			policy += "\n" + tc.rego + "\n"
			writeFiles(t, dir, map[string]string{
				"hooks/x.yaml": hookSet("x", `guards:
  policy_revision: r1
  rules:
    - {name: g, operation: tool_call, deny_if: "`+tc.guard+`", code: c, reason: r}
hooks:
  - name: review
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.review}
`),
				"policies/review.rego": policy,
			})
			gen, err := config.Load(dir, config.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, stage := range []engine.Stage{"", engine.StageAfterPlanning} {
				for _, v := range []string{"labels", "history"} {
					if gen.Reads.May(stage, v) {
						got = append(got, string(stage)+" "+v)
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("flow reads = %q, want %q", got, tc.want)
			}
		})
	}
}
