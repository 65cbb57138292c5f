package builtin_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/policy"
)

// stageRun runs one stage of gen with a fresh trail and returns its invocations and
// what the stage produced (enrichments, plan step ids, response) as a string.
func stageRun(t *testing.T, gen *config.Generation, stage engine.Stage, metadata map[string]any) ([]engine.Invocation, string) {
	t.Helper()
	ctx := requestCtx(gen, "req-1", noGate)
	pctx := &engine.PipelineContext{Request: "q", Metadata: metadata, Enrichments: map[string]any{}}
	trail := engine.NewTrail()
	var produced string
	switch stage {
	case engine.StageBeforePlanning:
		if _, err := gen.Pipeline.BeforePlanning(ctx, pctx, noGate, trail); err != nil {
			t.Fatal(err)
		}
		if v, ok := pctx.Enrichments["mark"]; ok {
			produced = v.(string)
		}
	case engine.StageAfterPlanning:
		plan, err := gen.Pipeline.AfterPlanning(ctx, pctx, quotePlan(2), nil, trail)
		if err != nil {
			t.Fatal(err)
		}
		produced = strings.Join(stepIDs(plan), ",")
	case engine.StageAfterExecution:
		gen.Pipeline.AfterExecution(ctx, pctx, twoStepResult(), trail)
	case engine.StageAfterSynthesis:
		produced = gen.Pipeline.AfterSynthesis(ctx, pctx, "answer", trail)
	}
	return trail.Invocations(), produced
}

// markStep is a step of stage that leaves a visible mark on what stageRun reports.
var markStep = map[engine.Stage]string{
	engine.StageBeforePlanning: `      - enrich: {key: mark, value: "'marked'"}`,
	engine.StageAfterPlanning:  `      - plan.remove_steps: {where: "step.step_id == 'step-2'"}`,
	engine.StageAfterExecution: `      - effect: {id: mark}`,
	engine.StageAfterSynthesis: `      - truncate: {max_bytes: 3, suffix: ''}`,
}

// unmarked is what stageRun reports when the mark step did not run.
var unmarked = map[engine.Stage]string{
	engine.StageBeforePlanning: "",
	engine.StageAfterPlanning:  "step-1,step-2",
	engine.StageAfterExecution: "",
	engine.StageAfterSynthesis: "answer",
}

func TestWhen_FalseSkipsHook(t *testing.T) {
	for _, stage := range engine.Stages {
		t.Run(string(stage), func(t *testing.T) {
			gen := loadHooks(t, hooks(catalogYAML, `hooks:
  - name: conditional
    stage: `+string(stage)+`
    when: has(metadata.tenant) && metadata.tenant == 'acme'
    steps:
`+markStep[stage]+"\n"))

			invs, produced := stageRun(t, gen, stage, map[string]any{"tenant": "globex"})
			wantInvocations(t, invs, 1)
			wantInvocation(t, invs[0], "conditional", engine.InvocationSkipped, engine.ReasonSkipped, "")
			if d := invs[0].Decision; d.FailurePolicy != engine.FailOpen || d.Action != engine.ActionContinue {
				t.Errorf("decision = %+v, want fail_open/continue/skipped", d)
			}
			if produced != unmarked[stage] || len(invs[0].Effects) != 0 {
				t.Errorf("a skipped hook's steps ran: produced %q, effects %+v", produced, invs[0].Effects)
			}

			// A true condition runs the steps.
			invs, produced = stageRun(t, gen, stage, map[string]any{"tenant": "acme"})
			wantInvocations(t, invs, 1)
			if invs[0].Status != engine.InvocationSucceeded {
				t.Errorf("invocation = %+v, want succeeded", invs[0])
			}
			if ran := produced != unmarked[stage] || len(invs[0].Effects) == 1; !ran {
				t.Errorf("the hook's steps did not run")
			}

			// A condition that fails to evaluate is a hook error.
			gen = loadHooks(t, hooks(catalogYAML, `hooks:
  - name: conditional
    stage: `+string(stage)+`
    when: metadata.tenant == 'acme'
    steps:
`+markStep[stage]+"\n"))
			invs, produced = stageRun(t, gen, stage, nil)
			wantInvocations(t, invs, 1)
			wantInvocation(t, invs[0], "conditional", engine.InvocationFailed, engine.ReasonHookError, "when: ")
			if produced != unmarked[stage] {
				t.Errorf("a failed condition ran the steps: %q", produced)
			}
		})
	}
}

// slowPolicy takes seconds to decide.
const slowPolicy = `package test.slow

decision := {"deny": {x | some x in ["never"]; n < 0}} if {
	n := count([1 | some i in numbers.range(1, 3000); some j in numbers.range(1, 3000)])
}
`

func TestHookTimeout_Cuts(t *testing.T) {
	srv := newContextServer(t)
	slow := `{url: "` + srv.URL + `/slow", key: rag_context, timeout: 10s}`
	lazy := `{url: "` + srv.URL + `/lazy", key: rag_context, timeout: 10s}`
	tests := []struct {
		name     string
		settings string
		timeout  string // the hook's timeout: line, if any
		params   string
		errPart  string // "" means the hook succeeds
	}{
		{"hook timeout", "", "    timeout: 50ms\n", slow, "hook timed out after 50ms: http.retrieve: "},
		{"settings hook_timeout", "settings: {hook_timeout: 50ms}\n", "", slow, "hook timed out after 50ms: "},
		{"the hook's timeout overrides the setting", "settings: {hook_timeout: 20ms}\n", "    timeout: 5s\n", lazy, ""},
		{"the setting cuts a lazy server", "settings: {hook_timeout: 20ms}\n", "", lazy, "hook timed out after 20ms: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen := loadHooks(t, hooks(tt.settings, `hooks:
  - name: retrieve
    stage: before_planning
`+tt.timeout+`    steps:
      - http.retrieve: `+tt.params+`
  - name: after
    stage: before_planning
    steps:
      - enrich: {key: after, value: "'ran'"}
`))
			start := time.Now()
			r := runBefore(t, gen, "req-1", "q", nil, noGate)
			if elapsed := time.Since(start); elapsed > 3*time.Second {
				t.Errorf("took %s", elapsed)
			}
			if r.out != nil || r.err != nil {
				t.Fatalf("BeforePlanning = %+v, %v", r.out, r.err)
			}
			wantInvocations(t, r.invs, 2)
			if tt.errPart == "" {
				wantInvocation(t, r.invs[0], "retrieve", engine.InvocationSucceeded, engine.ReasonNoDecision, "")
			} else {
				wantInvocation(t, r.invs[0], "retrieve", engine.InvocationFailed, engine.ReasonHookError, tt.errPart)
			}
			wantInvocation(t, r.invs[1], "after", engine.InvocationSucceeded, engine.ReasonNoDecision, "")
		})
	}
}

// A required hook that runs out of time, its own or the Rego evaluation's, fails
// closed with a timeout.
func TestHookTimeout_RequiredRegoFailsClosed(t *testing.T) {
	tests := []struct {
		name, settings, timeout, errPart string
	}{
		{"rego_timeout", "settings: {rego_timeout: 20ms}\n", "", "policy: data.test.slow.decision: evaluation timed out"},
		{"hook timeout", "", "    timeout: 20ms\n", "hook timed out after 20ms: policy: data.test.slow.decision: evaluation timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen := load(t, map[string]string{
				"hooks/plan.yaml": hooks(tt.settings, catalogYAML, `hooks:
  - name: allowed-operations
    stage: after_planning
    required: true
`+tt.timeout+`    steps:
      - rego: {query: data.test.slow.decision}
`),
				"policies/test/slow.rego": slowPolicy,
			})
			start := time.Now()
			got, invs, err := runAfter(t, gen, &engine.PipelineContext{}, quotePlan(1))
			if elapsed := time.Since(start); elapsed > 3*time.Second {
				t.Errorf("took %s", elapsed)
			}
			rerr, ok := engine.AsRequiredAfterPlanningError(err)
			if got != nil || !ok || !errors.Is(err, policy.ErrTimeout) {
				t.Fatalf("AfterPlanning = %v, %v; want a required error wrapping policy.ErrTimeout", got, err)
			}
			if rerr.Hook != "allowed-operations" || rerr.Reason != engine.ReasonHookError {
				t.Errorf("required error = %+v", rerr)
			}
			wantInvocation(t, invs[0], "allowed-operations", engine.InvocationFailed, engine.ReasonHookError, tt.errPart)
		})
	}
}
