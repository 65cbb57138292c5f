package expr

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

func TestEval_Values(t *testing.T) {
	now := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	vars := func() *Vars {
		return &Vars{
			Request:     "  Buy 10 ACME  ",
			Metadata:    map[string]any{"tenant": "acme", "tags": []any{"gold", "eu"}, "limit": 3},
			Enrichments: map[string]any{"user_profile": "trader"},
			Plan:        samplePlan(), Phase: 2, Step: &samplePlan().Steps[1],
			Result: sampleResult(), Response: "done", Now: now,
		}
	}
	tests := []struct {
		scope Scope
		src   string
		want  Kind
		value any
	}{
		{BeforePlanning, "has(metadata.tenant)", Bool, true},
		{BeforePlanning, "has(metadata.region)", Bool, false},
		{BeforePlanning, "has(enrichments.user_profile) && enrichments.user_profile == 'trader'", Bool, true},
		{BeforePlanning, "request.lowerAscii().trim()", String, "buy 10 acme"},
		{BeforePlanning, "sets.contains(metadata.tags, ['eu'])", Bool, true},
		{BeforePlanning, "math.greatest(metadata.limit, 7, 2)", Any, int64(7)},
		{BeforePlanning, "base64.encode(b'hi')", String, "aGk="},
		{BeforePlanning, "lists.range(3)", Any, []any{int64(0), int64(1), int64(2)}},
		{BeforePlanning, "now", Any, now},
		{BeforePlanning, "now - timestamp('2025-02-28T00:00:00Z')", Any, 24 * time.Hour},
		{BeforePlanning, "{'t': metadata.tenant, 'n': [1u, 2.5, null]}", Any,
			map[string]any{"t": "acme", "n": []any{uint64(1), 2.5, nil}}},
		{AfterPlanning, "plan.steps.exists(s, s.metadata.capability == 'execute_trade')", Bool, true},
		{AfterPlanning, "size(plan.steps)", Any, int64(2)},
		{AfterPlanning, "plan.steps.map(s, s.step_id)", Any, []any{"s1", "s2"}},
		{AfterPlanning, "plan.terminal == false && plan.mode == 'workflow' && phase == 2", Bool, true},
		{AfterPlanning, "plan.created_at", String, "2025-03-01T12:30:00.0000005Z"},
		{AfterPlanning, "has(plan.steps[0].depends_on) || has(plan.continuation_note)", Bool, false},
		{PlanStep, "step.metadata.capability == 'execute_trade'", Bool, true},
		{PlanStep, "step.metadata.parameters.amount > 10000 && step.depends_on == ['s1']", Bool, true},
		{AfterExecution, "result.steps.filter(s, !s.success).map(s, s.error)", Any, []any{"rejected"}},
		{AfterExecution, "result.total_duration == 1500000000 && result.steps[0].response.price > 100.0", Bool, true},
		{AfterExecution, "has(result.steps[0].error) || has(result.steps[1].skipped)", Bool, false},
		{AfterSynthesis, "response + '!'", String, "done!"},
	}
	c := newCompiler(t, 0)
	ctx := context.Background()
	for _, tt := range tests {
		p := mustCompile(t, c, tt.scope, tt.src, tt.want)
		got, err := p.Eval(ctx, vars())
		if err != nil {
			t.Errorf("Eval(%q): %v", tt.src, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.value) {
			t.Errorf("Eval(%q) = %#v, want %#v", tt.src, got, tt.value)
		}
	}
}

func TestEval_GuardAmount(t *testing.T) {
	c := newCompiler(t, 0)
	p := mustCompile(t, c, Guard, "call.capability == 'execute_trade' && double(call.parameters.amount) > 10000.0", Bool)
	tests := []struct {
		amount any
		want   bool
	}{
		{12000, true}, {int64(9000), false}, {12000.5, true}, {float64(10000), false},
		{uint(20000), true},
	}
	for _, tt := range tests {
		got, err := p.EvalBool(context.Background(), &Vars{Call: sampleCall(tt.amount)})
		if err != nil || got != tt.want {
			t.Errorf("amount %T(%v): got %v, %v; want %v", tt.amount, tt.amount, got, err, tt.want)
		}
	}
	// An inference call has no capability: the field is absent, as in its JSON.
	_, err := p.EvalBool(context.Background(), &Vars{})
	wantEvalKind(t, err, EvalFailed)
}

func TestEval_Errors(t *testing.T) {
	items := func(n int) map[string]any {
		items := make([]any, n)
		for i := range items {
			items[i] = i
		}
		return map[string]any{"items": items}
	}
	tests := []struct {
		name     string
		src      string
		want     Kind
		opts     Options
		vars     *Vars
		kind     EvalKind
		contains string
	}{
		{name: "missing key", src: "metadata.region == 'eu'", kind: EvalFailed, contains: "no such key"},
		{name: "dyn result is not a bool", src: "metadata.flag", vars: &Vars{Metadata: map[string]any{"flag": "yes"}},
			kind: EvalFailed, contains: "want bool"},
		{name: "dyn result is not a string", src: "metadata.n", want: String,
			vars: &Vars{Metadata: map[string]any{"n": 1}}, kind: EvalFailed, contains: "want string"},
		{name: "map key is not a string", src: "{1: 'a'}", want: Any, kind: EvalFailed, contains: "not a string"},
		{name: "division by zero", src: "1 / size(request) > 0", kind: EvalFailed, contains: "division by zero"},
		// The estimate assumes bounded inputs; larger ones are stopped by the runtime limits.
		{name: "runtime cost limit on a string", src: "request.contains('needle')", opts: Options{CostLimit: 10_000},
			vars: &Vars{Request: strings.Repeat("hay ", 50_000)}, kind: EvalCostLimit,
			contains: "actual cost exceeded the limit 10000"},
		{name: "runtime cost limit in a comprehension", src: "metadata.items.exists(x, x == -1)",
			opts: Options{CostLimit: 7_000}, vars: &Vars{Metadata: items(3000)}, kind: EvalCostLimit,
			contains: "actual cost exceeded the limit 7000"},
		{name: "iteration limit", src: "metadata.items.exists(x, x == -1)", opts: Options{CostLimit: 1 << 40},
			vars: &Vars{Metadata: items(DefaultMaxIterations + 1)}, kind: EvalCostLimit,
			contains: "comprehensions exceeded 5000 iterations"},
		{name: "iteration limit counts nested comprehensions", src: "metadata.items.all(x, metadata.items.all(y, y >= 0))",
			opts: Options{CostLimit: 1 << 40, MaxIterations: 100}, vars: &Vars{Metadata: items(10)},
			kind: EvalCostLimit, contains: "comprehensions exceeded 100 iterations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCompiler(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			p := mustCompile(t, c, BeforePlanning, tt.src, tt.want)
			_, err = p.Eval(context.Background(), tt.vars)
			e := wantEvalKind(t, err, tt.kind)
			if !strings.Contains(e.Message, tt.contains) {
				t.Errorf("message = %q, want it to contain %q", e.Message, tt.contains)
			}
			if c := engine.CauseOf(err); c != engine.CauseEvaluationError {
				t.Errorf("cause = %s, want %s", c, engine.CauseEvaluationError)
			}
		})
	}
}

func TestEval_IterationLimitAdmitsSmallerInputs(t *testing.T) {
	c, err := NewCompiler(Options{CostLimit: 1 << 40, MaxIterations: 110})
	if err != nil {
		t.Fatal(err)
	}
	p := mustCompile(t, c, BeforePlanning, "metadata.items.all(x, metadata.items.all(y, y >= 0))", Bool)
	vars := &Vars{Metadata: map[string]any{"items": []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}}
	for range 3 { // the count restarts with every evaluation
		if ok, err := p.EvalBool(context.Background(), vars); err != nil || !ok {
			t.Fatalf("10 + 10*10 iterations under a limit of 110: %v, %v", ok, err)
		}
	}
}

func TestEval_ContextCancellationInterrupts(t *testing.T) {
	items := func(n int) *Vars {
		items := make([]any, n)
		for i := range items {
			items[i] = i
		}
		return &Vars{Metadata: map[string]any{"items": items}}
	}
	// Limits so high that only the context can stop an evaluation over 100,000 items.
	c, err := NewCompiler(Options{CostLimit: 1 << 40, MaxIterations: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	p := mustCompile(t, c, BeforePlanning, "metadata.items.all(x, x >= 0)", Bool)
	if ok, err := p.EvalBool(context.Background(), items(100)); err != nil || !ok {
		t.Fatalf("uncancelled: %v, %v", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.EvalBool(ctx, items(100_000))
	wantEvalKind(t, err, EvalInterrupted)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", err)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err = p.EvalBool(ctx, items(100_000))
	if wantEvalKind(t, err, EvalInterrupted); engine.CauseOf(err) != engine.CauseTimeout {
		t.Errorf("cause of %v = %s, want %s", err, engine.CauseOf(err), engine.CauseTimeout)
	}
}

func TestEval_Now(t *testing.T) {
	p := mustCompile(t, newCompiler(t, 0), BeforePlanning, "now", Any)
	before := time.Now()
	vars := &Vars{}
	first, err := p.Eval(context.Background(), vars)
	if err != nil {
		t.Fatal(err)
	}
	if got := first.(time.Time); got.Before(before) || got.After(time.Now()) {
		t.Errorf("zero Now resolved to %v, want the current time", got)
	}
	again, _ := p.Eval(context.Background(), vars)
	if again != first {
		t.Errorf("now changed within one Vars: %v then %v", first, again)
	}
}

// TestProgram_ConcurrentUse shares one Program between goroutines, each with its own Vars.
func TestProgram_ConcurrentUse(t *testing.T) {
	p := mustCompile(t, newCompiler(t, 0), AfterPlanning,
		"plan.steps.exists(s, s.metadata.capability == 'execute_trade') && phase % 2 == 0", Bool)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			vars := &Vars{Plan: samplePlan()}
			for i := range 50 {
				vars.Phase = g + i
				ok, err := p.EvalBool(context.Background(), vars)
				if err != nil || ok != ((g+i)%2 == 0) {
					t.Errorf("phase %d: %v, %v", g+i, ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
