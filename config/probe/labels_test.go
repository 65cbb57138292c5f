package probe_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config/probe"
)

// mailConfig is a mail agent: a catalog of read_secret, fetch_url and send_email, the
// labels secret and untrusted, the guards given, and a required review querying
// data.review (policy).
func mailConfig(guards, policy string) map[string]string {
	doc := `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: mail}
catalog:
  - namespace: office
    agent: assistant
    capabilities:
      - {name: read_secret}
      - {name: fetch_url}
      - {name: send_email}
labels:
  - {label: secret, when: "call.capability == 'read_secret'"}
  - {label: untrusted, when: "call.capability == 'fetch_url'"}
hooks:
  - name: review
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.review}
`
	if guards != "" {
		doc += "guards:\n  policy_revision: r1\n  rules:\n    - {name: egress, operation: tool_call, deny_if: \"" + guards + "\", code: secret_egress, reason: no mail after a secret}\n"
	}
	return map[string]string{"hooks/mail.yaml": doc, "policies/review.rego": `package review

deny contains "capability" if {
	some step in input.plan.steps
	not allowed(step)
}

allowed(step) if step.metadata.capability in {"read_secret", "fetch_url", "send_email"}
` + policy}
}

// Label rules of the review: sound (every step), only the first step, and one naming a
// label the config does not declare.
const (
	egressEveryStep = `
deny contains "egress" if {
	"secret" in input.labels
	some step in input.plan.steps
	step.metadata.capability == "send_email"
}
`
	egressFirstStep = `
deny contains "egress" if {
	"secret" in input.labels
	input.plan.steps[0].metadata.capability == "send_email"
}
`
	egressMisspelled = `
deny contains "egress" if {
	"secrets" in input.labels
	some step in input.plan.steps
	step.metadata.capability == "send_email"
}
`
)

// A review whose label rule looks at the first step only lets a mail through after a
// secret when the mail hides behind an allowed step: the probe reviews the catalog's
// plans under each declared label alone and under all of them, finds the escape under
// the secret label (which the same plan without labels is allowed, so only the label
// set's own allowance can tell) and renders it as a test case starting from the label.
func TestRun_LabelRuleOnTheFirstStepOnlyIsFound(t *testing.T) {
	r := run(t, mailConfig("", egressFirstStep), probe.Options{})
	if want := [][]string{{"secret"}, {"untrusted"}, {"secret", "untrusted"}}; !slices.EqualFunc(r.LabelSets, want, slices.Equal) {
		t.Errorf("label sets = %v, want %v", r.LabelSets, want)
	}
	var escape *probe.Finding
	for i, f := range r.Findings {
		if f.Identity == "office/assistant/send_email" && slices.Contains(f.Labels, "secret") {
			escape = &r.Findings[i]
		}
	}
	if escape == nil {
		t.Fatalf("no finding of a mail under the secret label: %+v", r.Findings)
	}
	if escape.Mutation != "hidden_step" && escape.Mutation != "reorder_steps" && escape.Mutation != "later_phase" {
		t.Errorf("the escape's mutation = %s, want one that moves the mail off the first step", escape.Mutation)
	}
	if cases := string(r.Cases()); !strings.Contains(cases, "labels:") || !strings.Contains(cases, "- secret") {
		t.Errorf("the cases do not start from the secret label:\n%s", cases)
	}
	if len(r.LabelFindings) != 0 {
		t.Errorf("label findings = %+v, want none (the rule fires)", r.LabelFindings)
	}

	r = run(t, mailConfig("", egressEveryStep), probe.Options{})
	if len(r.Findings) != 0 || len(r.LabelFindings) != 0 {
		t.Errorf("the sound rule: findings %+v, label findings %+v", r.Findings, r.LabelFindings)
	}
	seeds := map[string]probe.Ending{}
	for _, s := range r.Seeds {
		seeds[s.Source] = s.Ending
	}
	for source, want := range map[string]probe.Ending{
		"catalog office/assistant/send_email":                                   probe.Accepted,
		"catalog office/assistant/send_email with the labels secret":            probe.RejectedStage,
		"catalog office/assistant/send_email with the labels untrusted":         probe.Accepted,
		"catalog office/assistant/send_email with the labels secret, untrusted": probe.RejectedStage,
		"catalog office/assistant/read_secret with the labels secret":           probe.Accepted,
	} {
		if seeds[source] != want {
			t.Errorf("seed %q ended %q, want %q", source, seeds[source], want)
		}
	}
}

// A reader of the flow whose decisions no label set changes is reported: a review or
// guard naming a label the config does not declare never fires. One that fires is not.
func TestRun_LabelRuleThatNeverFiresIsReported(t *testing.T) {
	for _, tc := range []struct {
		name, guard, policy string
		want                []string // readers reported
	}{
		{"review misspelled", "", egressMisspelled, []string{"after_planning"}},
		{"guard misspelled", "'secrets' in labels && call.capability == 'send_email'", egressEveryStep, []string{"guards"}},
		{"both misspelled", "'secrets' in labels && call.capability == 'send_email'", egressMisspelled, []string{"after_planning", "guards"}},
		{"both fire", "'secret' in labels && call.capability == 'send_email'", egressEveryStep, nil},
		{"a guard reading call.labels fires", "'secret' in call.labels || 'secret' in labels && call.capability == 'send_email'", "", nil},
		{"no reader", "call.capability == 'fetch_url'", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, mailConfig(tc.guard, tc.policy), probe.Options{MaxPlans: 200})
			var got []string
			for _, f := range r.LabelFindings {
				got = append(got, f.Reader)
				if !strings.Contains(f.Detail, "[secret] [untrusted] [secret, untrusted]") {
					t.Errorf("the finding does not name the label sets tried: %s", f.Detail)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("label findings = %v, want %v", r.LabelFindings, tc.want)
			}
			if (tc.name == "no reader") != (len(r.LabelSets) == 0) {
				t.Errorf("label sets = %v", r.LabelSets)
			}
		})
	}
}

// A guard alone reading the labels judges the seeds under them: the catalog's mail
// under the secret label ends at the guards, and a guard that only denies the first
// step's id lets the mail through once it hides among allowed steps.
func TestRun_GuardReadingLabelsJudgesTheSeeds(t *testing.T) {
	r := run(t, mailConfig("'secret' in labels && call.capability == 'send_email'", ""), probe.Options{})
	ended := map[string]probe.Ending{}
	for _, s := range r.Seeds {
		ended[s.Source] = s.Ending
	}
	if got := ended["catalog office/assistant/send_email with the labels secret"]; got != probe.RejectedGuard {
		t.Errorf("the mail under the secret label ended %q, want %q", got, probe.RejectedGuard)
	}
	if got := ended["catalog office/assistant/send_email"]; got != probe.Accepted {
		t.Errorf("the mail without labels ended %q, want accepted", got)
	}
	if len(r.Findings) != 0 || len(r.LabelFindings) != 0 {
		t.Errorf("findings %+v, label findings %+v, want none", r.Findings, r.LabelFindings)
	}

	r = run(t, mailConfig("'secret' in labels && call.capability == 'send_email' && call.step_id == 'step-1'", ""), probe.Options{})
	found := false
	for _, f := range r.Findings {
		found = found || f.Identity == "office/assistant/send_email" && slices.Equal(f.Labels, []string{"secret"}) && f.Mutation == "hidden_step"
	}
	if !found {
		t.Errorf("no hidden mail under the secret label found: %+v", r.Findings)
	}
}

// A reader of the history alone is exercised but never reported silent: the label sets
// start from no history, so its rules cannot fire in the probe.
func TestRun_HistoryOnlyReaderIsNotReportedSilent(t *testing.T) {
	r := run(t, mailConfig("history.exists(h, h.capability == 'read_secret') && call.capability == 'send_email'", ""), probe.Options{MaxPlans: 200})
	if len(r.LabelSets) != 3 || len(r.LabelFindings) != 0 {
		t.Errorf("label sets %v, label findings %+v: want three sets and no finding", r.LabelSets, r.LabelFindings)
	}
}

// A config that reads labels but declares none has no label set to try, and says so.
func TestRun_LabelsReadButNoneDeclaredIsAWarning(t *testing.T) {
	guards := "guards:\n  policy_revision: r1\n  rules:\n    - {name: g, operation: tool_call, deny_if: \"'secret' in labels\", code: c, reason: r}\n"
	r := run(t, map[string]string{"hooks/plan.yaml": hookSet(true) + guards, "policies/review.rego": fixed}, probe.Options{MaxPlans: 200})
	if len(r.LabelSets) != 0 || len(r.LabelFindings) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "declares no label") {
		t.Errorf("label sets %v, label findings %v, warnings %q", r.LabelSets, r.LabelFindings, r.Warnings)
	}
}

// The guards judge a plan's calls, not plan binding: a step whose parameters refer to an
// earlier step's response (unresolved in a review) is checked by the guards as planned.
func TestRun_GuardsJudgeStepsWithReferences(t *testing.T) {
	files := mailConfig("'secret' in labels && call.capability == 'send_email'", "")
	files["tests/flow.yaml"] = `apiVersion: agentd.dev/v1
kind: HookTests
tests:
  - name: read then mail
    stage: after_planning
    given:
      plan:
        plan_id: p
        steps:
          - {step_id: step-1, agent_name: assistant, namespace: office, instruction: read, metadata: {capability: fetch_url, parameters: {url: "https://example.com"}}}
          - {step_id: step-2, agent_name: assistant, namespace: office, instruction: mail, depends_on: [step-1], metadata: {capability: send_email, parameters: {to: a@example.com, body: "{{step-1.response.page}}"}}}
    expect: {plan: allowed}
`
	r := run(t, files, probe.Options{MaxPlans: 200})
	ended := map[string]probe.Ending{}
	for _, s := range r.Seeds {
		ended[s.Source] = s.Ending
	}
	for source, want := range map[string]probe.Ending{
		"tests/flow.yaml:4":                           probe.Accepted,
		"tests/flow.yaml:4 with the labels untrusted": probe.Accepted,
		"tests/flow.yaml:4 with the labels secret":    probe.RejectedGuard,
	} {
		if ended[source] != want {
			t.Errorf("seed %q ended %q, want %q (seeds: %v)", source, ended[source], want, ended)
		}
	}
}
