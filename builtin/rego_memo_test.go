package builtin

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/policy"
)

// libraryQuery compiles the repository's policies with an allow-list and prepares
// data.agentd.plan.
func libraryQuery(t *testing.T, extra ...policy.Module) *policy.Query {
	t.Helper()
	var modules []policy.Module
	root := filepath.Join("..", "policies")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".rego" || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		src, err := os.ReadFile(p)
		modules = append(modules, policy.Module{File: p, Source: src})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]any{"agentd": map[string]any{"allowlist": map[string]any{
		"demo-tools": map[string]any{"stock-service": []any{"stock_quote", "news"}},
		"docs":       map[string]any{"search": []any{"search"}},
	}}}
	// A generous deadline: the differential tests compare decisions, and a loaded
	// machine must not turn an evaluation into a timeout on one side only.
	b, err := policy.Compile(append(modules, extra...), []policy.DataFile{{File: "data.json", Value: data}}, policy.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q, err := b.Prepare("data.agentd.plan")
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// randomPlan draws a plan from a small pool of identities, allowed and not, with some
// malformed steps, so that plans repeat and decisions vary.
func randomPlan(r *rand.Rand) *engine.RoutingPlan {
	namespaces := []string{"demo-tools", "docs", "bank"}
	agents := []string{"stock-service", "search", "vault"}
	capabilities := []string{"stock_quote", "news", "search", "execute_trade", ""}
	plan := &engine.RoutingPlan{PlanID: fmt.Sprintf("p%d", r.IntN(3))}
	for i := range r.IntN(4) {
		step := engine.RoutingStep{
			StepID: fmt.Sprintf("%s-%d", []string{"step", "s", "x"}[r.IntN(3)], i+1), Namespace: namespaces[r.IntN(len(namespaces))],
			AgentName: agents[r.IntN(len(agents))], Metadata: map[string]any{},
			Instruction: fmt.Sprintf("instruction %d", r.IntN(1000)),
		}
		if c := capabilities[r.IntN(len(capabilities))]; c != "" {
			step.Metadata["capability"] = c
		}
		plan.Steps = append(plan.Steps, step)
	}
	return plan
}

// TestRegoMemo_MatchesUnmemoizedEvaluation is the differential test of memoization:
// on generated plans, the memoized action (first call and repeated calls) decides
// exactly what unmemoized evaluation decides.
func TestRegoMemo_MatchesUnmemoizedEvaluation(t *testing.T) {
	q := libraryQuery(t)
	if q.NewPlanMemo(16) == nil {
		t.Fatal("the stock allow-list should be memoizable")
	}
	memoized := newRegoPlan(q, "data.agentd.plan", "review", true, slog.New(slog.DiscardHandler))
	plain := newRegoPlan(q, "data.agentd.plan", "review", false, nil)
	r := rand.New(rand.NewPCG(1, 2))
	hits := 0
	for i := range 2000 {
		plan := randomPlan(r)
		request := fmt.Sprintf("request %d", r.IntN(5))
		s := func() *State {
			p, _ := engine.ClonePlan(plan)
			return &State{Plan: p, Pctx: &engine.PipelineContext{Request: request, Metadata: map[string]any{}, Enrichments: map[string]any{}}}
		}
		if m := memoized.memo.Load(); m != nil && hit(t, m, plan, request) {
			hits++
		}
		want, wantErr := plain.decide(context.Background(), s())
		got, gotErr := memoized.decide(context.Background(), s())
		if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(want, got) {
			t.Fatalf("plan %d %+v: memoized %+v (%v), unmemoized %+v (%v)", i, plan, got, gotErr, want, wantErr)
		}
	}
	if hits == 0 {
		t.Fatal("no decision came from the memo; the test proves nothing")
	}
	t.Logf("%d of 2000 decisions came from the memo", hits)
}

func TestRegoMemo_KeyIgnoresInputThePolicyDoesNotRead(t *testing.T) {
	q := libraryQuery(t)
	a0 := newRegoPlan(q, "data.agentd.plan", "review", true, nil)
	m := a0.memo.Load()
	if got, want := a0.Describe(), "rego data.agentd.plan: decisions memoized on input.plan.steps (size), input.plan.steps[*].agent_name, "+
		"input.plan.steps[*].metadata.capability, input.plan.steps[*].namespace, input.plan.steps[*].step_id; "+
		"those allowing the plan on input.plan.steps (size), input.plan.steps[*].agent_name, input.plan.steps[*].metadata.capability, "+
		"input.plan.steps[*].namespace, input.plan.steps[*].step_id (type)"; got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
	plan := randomPlan(rand.New(rand.NewPCG(3, 4)))
	plan.Steps = append(plan.Steps, engine.RoutingStep{StepID: "step-9", Namespace: "docs", AgentName: "search", Metadata: map[string]any{"capability": "search"}})
	a := planKey(t, m, plan, 1, "first question", map[string]any{"tenant": "a"})
	renamed, _ := engine.ClonePlan(plan)
	renamed.PlanID, renamed.CreatedAt = "another-plan", renamed.CreatedAt.Add(time.Hour)
	notLast := false
	renamed.ContinuationNote, renamed.Terminal = "more later", &notLast // members the policy never reads
	for i := range renamed.Steps {
		renamed.Steps[i].Instruction = "reworded " + renamed.Steps[i].Instruction
	}
	b := planKey(t, m, renamed, 2, "second question", map[string]any{"tenant": "b"})
	other, _ := engine.ClonePlan(plan)
	other.Steps[len(other.Steps)-1].Metadata["capability"] = "execute_trade"
	c := planKey(t, m, other, 1, "first question", map[string]any{"tenant": "a"})
	if a != b || a == c {
		t.Fatalf("keys: same operations, other plan id, instructions, optional members and request equal = %v (want true); other operations equal = %v (want false)", a == b, a == c)
	}
}

func planKey(t *testing.T, m *policy.PlanMemo, plan *engine.RoutingPlan, phase int, request string, metadata map[string]any) policy.MemoKey {
	t.Helper()
	key, err := m.PlanKey(plan, phase, request, metadata, map[string]any{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// An orchestrator names the steps of every new plan afresh: over operations already
// allowed, a plan with new step ids is answered from the memo; a denied plan is
// evaluated, and its violations name its own steps, however many denied plans of the
// same operations came before.
func TestRegoMemo_NewStepIDsOverAllowedOperationsHit(t *testing.T) {
	a := newRegoPlan(libraryQuery(t), "data.agentd.plan", "review", true, slog.New(slog.DiscardHandler))
	plan := func(id, agent string) *State {
		return &State{Plan: &engine.RoutingPlan{PlanID: "p-" + id, Steps: []engine.RoutingStep{
			{StepID: id + "-a", Namespace: "demo-tools", AgentName: "stock-service", Metadata: map[string]any{"capability": "stock_quote"}},
			{StepID: id + "-b", Namespace: "demo-tools", AgentName: agent, Metadata: map[string]any{"capability": "stock_quote"}, DependsOn: []string{id + "-a"}},
		}}, Pctx: &engine.PipelineContext{Metadata: map[string]any{}, Enrichments: map[string]any{}}}
	}
	memo := a.memo.Load()
	for i := range 3 {
		s := plan(fmt.Sprint("allowed", i), "stock-service")
		wasHit := hit(t, memo, s.Plan, "")
		if d, err := a.decide(context.Background(), s); err != nil || !d.Allowed() {
			t.Fatalf("allowed plan %d: %+v, %v", i, d, err)
		}
		if wasHit != (i > 0) {
			t.Fatalf("allowed plan %d with new step ids: hit %v, want %v", i, wasHit, i > 0)
		}
	}
	for i := range 3 {
		id := fmt.Sprint("denied", i)
		s := plan(id, "vault")
		if hit(t, memo, s.Plan, "") {
			t.Fatalf("denied plan %d with new step ids answered from the memo", i)
		}
		d, err := a.decide(context.Background(), s)
		if err != nil || len(d.Deny) != 1 || d.Deny[0].StepID != id+"-b" {
			t.Fatalf("denied plan %d: %+v, %v; want one violation naming %s-b", i, d, err, id)
		}
	}
}

func TestRegoMemo_NotForNonDeterministicPolicies(t *testing.T) {
	clock := policy.Module{File: "clock.rego", Source: []byte("package agentd.clock\n\nnow := time.now_ns()\n")}
	q := libraryQuery(t, clock)
	if q.NewPlanMemo(16) != nil {
		t.Fatal("a bundle calling time.now_ns must not be memoized")
	}
	a := newRegoPlan(q, "data.agentd.plan", "review", true, nil)
	if got, want := a.Describe(), "rego data.agentd.plan: decisions not memoized (a policy calls a non-deterministic built-in)"; got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
}

// TestRegoMemo_AuditTurnsAWrongMemoOff plants a wrong decision in the memo: the audited
// hit answers from the memo like any other and is evaluated off the request's path on
// its input as it was (the caller changes its plan afterwards); the disagreement is
// logged and turns the memo off, so later calls get the evaluated denial.
func TestRegoMemo_AuditTurnsAWrongMemoOff(t *testing.T) {
	var logs bytes.Buffer
	a := newRegoPlan(libraryQuery(t), "data.agentd.plan", "review", true, slog.New(slog.NewJSONHandler(&logs, nil)))
	a.auditEvery = 3
	denied := func() *engine.RoutingPlan {
		return &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{{StepID: "s1", Namespace: "bank", AgentName: "vault",
			Metadata: map[string]any{"capability": "execute_trade"}}}}
	}
	s := &State{Plan: denied(), Pctx: &engine.PipelineContext{Metadata: map[string]any{}, Enrichments: map[string]any{}}}
	wrong := policy.PlanDecision{} // allows the plan, which the allow-list denies
	memo := a.memo.Load()
	memo.Put(planKey(t, memo, s.Plan, 1, "", map[string]any{}), wrong)
	for i := range 3 {
		if d, err := a.decide(context.Background(), s); err != nil || !d.Allowed() {
			t.Fatalf("hit %d: %+v, %v; want the memoized allow", i+1, d, err)
		}
	}
	step := &s.Plan.Steps[0] // the audit must not see this: it would agree
	step.Namespace, step.AgentName, step.Metadata["capability"] = "demo-tools", "stock-service", "stock_quote"
	a.audits.Wait()
	if a.memo.Load() != nil {
		t.Fatal("the memo still answers after an audit disagreed")
	}
	if !strings.Contains(logs.String(), `"msg":"rego decision memo disagreed with evaluation; memo off for this generation"`) ||
		!strings.Contains(logs.String(), `"memoized_allowed":true,"evaluated_allowed":false`) {
		t.Fatalf("log = %s", logs.String())
	}
	s.Plan = denied()
	if d, err := a.decide(context.Background(), s); err != nil || d.Allowed() {
		t.Fatalf("after the audit: %+v, %v; want the evaluated denial", d, err)
	}
}

// TestRegoMemo_AuditOutlivesItsRequest: a hit sampled while an audit runs is not
// audited; the audit of a request whose context has ended (as the daemon's does once
// the hit is answered) still evaluates, and turns a wrong memo off.
func TestRegoMemo_AuditOutlivesItsRequest(t *testing.T) {
	a := newRegoPlan(libraryQuery(t), "data.agentd.plan", "review", true, slog.New(slog.DiscardHandler))
	a.auditEvery = 1
	plan := &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{{StepID: "s1", Namespace: "bank", AgentName: "vault",
		Metadata: map[string]any{"capability": "execute_trade"}}}}
	s := &State{Plan: plan, Pctx: &engine.PipelineContext{Metadata: map[string]any{}, Enrichments: map[string]any{}}}
	memo := a.memo.Load()
	memo.Put(planKey(t, memo, plan, 1, "", map[string]any{}), policy.PlanDecision{}) // a wrong allow
	a.auditing.Store(true)                                                           // an audit is running
	if d, err := a.decide(context.Background(), s); err != nil || !d.Allowed() {
		t.Fatalf("hit: %+v, %v; want the memoized allow", d, err)
	}
	a.audits.Wait()
	if a.memo.Load() == nil {
		t.Fatal("a hit sampled while an audit ran was audited")
	}
	a.auditing.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d, err := a.decide(ctx, s); err != nil || !d.Allowed() {
		t.Fatalf("hit: %+v, %v; want the memoized allow", d, err)
	}
	a.audits.Wait()
	if a.memo.Load() != nil {
		t.Fatal("an audit whose request ended did not turn the wrong memo off")
	}
}

func hit(t *testing.T, m *policy.PlanMemo, plan *engine.RoutingPlan, request string) bool {
	t.Helper()
	_, _, ok, err := m.Lookup(plan, 1, request, map[string]any{}, map[string]any{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// A memoized query is evaluated on what it may read, so a value it never reads (an
// infinite enrichment a CEL division produced) fails no review, on a miss, a hit or an
// explained evaluation alike; without a memo the whole input is converted and fails.
func TestRegoMemo_ValuesThePolicyNeverReadsFailNoReview(t *testing.T) {
	q := libraryQuery(t)
	memoized := newRegoPlan(q, "data.agentd.plan", "review", true, nil)
	plain := newRegoPlan(q, "data.agentd.plan", "review", false, nil)
	s := func() *State {
		plan := &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{{StepID: "step-1", Namespace: "demo-tools", AgentName: "stock-service",
			Metadata: map[string]any{"capability": "stock_quote"}}}}
		return &State{Plan: plan, Pctx: &engine.PipelineContext{Metadata: map[string]any{}, Enrichments: map[string]any{"ratio": math.Inf(1)}}}
	}
	explained := policy.NewExplainer().Context(context.Background())
	for _, ctx := range []context.Context{context.Background(), context.Background(), explained} {
		if d, err := memoized.decide(ctx, s()); err != nil || !d.Allowed() {
			t.Fatalf("memoized (traced %v): %+v, %v; want allowed", policy.Traced(ctx), d, err)
		}
	}
	if _, err := plain.decide(context.Background(), s()); err == nil || !strings.Contains(err.Error(), "unsupported number") {
		t.Fatalf("memo: false: %v; want the whole input's conversion error", err)
	}
}
