package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/internal/wiretest"
	"github.com/agentd-dev/agentd/engine/policy/internal/regovalue"
)

func TestPrepare(t *testing.T) {
	b := libraryBundle(t, Options{})
	tests := []struct {
		query    string
		wantKind diag.Kind // "" means the query prepares
		mention  string
	}{
		{query: "data.agentd.plan"},
		{query: "data.agentd.guard"},
		{query: "data.agentd"},
		{query: "data"},
		{query: "data.agentd.plan.deny"},
		{query: `data.agentd.plan["allow"]`},
		{query: "data.agentd.allowlist"},
		{query: `data.agentd.allowlist["demo-tools"]`},
		{query: "data.agentd.allowlist[\"demo-tools\"][\"stock-service\"]"},
		{query: "data.agentd.plans", wantKind: diag.KindUndefinedQuery, mention: "data.agentd.plan)"},
		{query: "data.agentd.guards.deny", wantKind: diag.KindUndefinedQuery, mention: "data.agentd.guard)"},
		{query: "data.agentd.plan.denied", wantKind: diag.KindUndefinedQuery, mention: "data.agentd.plan)"},
		{query: `data.agentd.allowlist["other-tools"]`, wantKind: diag.KindUndefinedQuery},
		{query: "data.agentd.allowlist.demo-tools", wantKind: diag.KindUndefinedQuery},
		{query: "data.nothing", wantKind: diag.KindUndefinedQuery, mention: "nearest package"},
		{query: "input.plan", wantKind: diag.KindUndefinedQuery},
		{query: "data.agentd[_]", wantKind: diag.KindUndefinedQuery},
		{query: "data.agentd.plan; true", wantKind: diag.KindUndefinedQuery},
		{query: "", wantKind: diag.KindUndefinedQuery},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := b.Prepare(tt.query)
			if tt.wantKind == "" {
				if err != nil {
					t.Fatalf("Prepare: %v", err)
				}
				return
			}
			var e *diag.Error
			if !errors.As(err, &e) || e.Kind != tt.wantKind {
				t.Fatalf("Prepare = %v, %v; want kind %s", q, err, tt.wantKind)
			}
			if !strings.Contains(e.Message, tt.mention) {
				t.Errorf("message %q does not mention %q", e.Message, tt.mention)
			}
		})
	}
}

func TestPrepareNoPackages(t *testing.T) {
	b, err := Compile(nil, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Prepare("data.agentd.plan"); err == nil || !strings.Contains(err.Error(), "no packages") {
		t.Fatalf("Prepare = %v, want undefined_query naming no packages", err)
	}
}

func TestEvalUndefined(t *testing.T) {
	b := mustCompile(t, Options{}, "p.rego", "package p\n\nx := 1 if input.on\n")
	q := mustPrepare(t, b, "data.p.x")
	v, defined, err := q.eval(t.Context(), nil)
	if err != nil || defined {
		t.Fatalf("Eval(no input) = %v, %v, %v; want undefined", v, defined, err)
	}
	in, _ := regovalue.Of(map[string]any{"on": true})
	v, defined, err = q.eval(t.Context(), in)
	if err != nil || !defined || v != json.Number("1") {
		t.Fatalf("Eval(on) = %v, %v, %v; want 1", v, defined, err)
	}
}

func TestEvalError(t *testing.T) {
	b := mustCompile(t, Options{}, "p.rego", "package p\n\nn := to_number(input.s)\n")
	in, _ := regovalue.Of(map[string]any{"s": "not a number"})
	_, _, err := mustPrepare(t, b, "data.p.n").eval(t.Context(), in)
	if !errors.Is(err, ErrEval) || errors.Is(err, ErrTimeout) {
		t.Fatalf("Eval = %v, want ErrEval (built-in errors are strict)", err)
	}
	var ee *EvalError
	if !errors.As(err, &ee) || ee.Query != "data.p.n" || ee.Cause == nil {
		t.Fatalf("error %#v is not a complete *EvalError", err)
	}
}

// slowPolicy takes seconds to evaluate: a comprehension over 9 million pairs.
const slowPolicy = `package slow

deny contains "unreachable" if {
	count([x | some i in numbers.range(1, 3000); some j in numbers.range(1, 3000); x := i * j]) < 0
}
`

func TestEvalTimeout(t *testing.T) {
	b := mustCompile(t, Options{Timeout: time.Millisecond}, "slow.rego", slowPolicy)
	q := mustPrepare(t, b, "data.slow")
	_, err := q.PlanDecision(t.Context(), nil)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PlanDecision = %v, want ErrTimeout", err)
	}
	if errors.Is(err, ErrEval) || errors.Is(err, ErrCanceled) {
		t.Errorf("timeout error %v also matches another reason", err)
	}
}

func TestEvalCanceled(t *testing.T) {
	b := mustCompile(t, Options{Timeout: time.Minute}, "slow.rego", slowPolicy)
	q := mustPrepare(t, b, "data.slow")

	t.Run("before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, _, err := q.eval(ctx, nil)
		if !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Eval = %v, want ErrCanceled", err)
		}
	})
	t.Run("during", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(5*time.Millisecond, cancel)
		_, _, err := q.eval(ctx, nil)
		if !errors.Is(err, ErrCanceled) || errors.Is(err, ErrTimeout) {
			t.Fatalf("Eval = %v, want ErrCanceled", err)
		}
	})
	t.Run("caller_deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		_, _, err := q.eval(ctx, nil)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("Eval = %v, want ErrTimeout for the caller's deadline", err)
		}
	})
}

func TestQueryConcurrentUse(t *testing.T) {
	b := libraryBundle(t, Options{Timeout: 10 * time.Second}) // generous: -race is slow
	q := mustPrepare(t, b, "data.agentd.plan")
	plans := []*engine.RoutingPlan{
		wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote")),
		wiretest.StockPlan(wiretest.StockStep("step-1", "stock_quote"), wiretest.StockStep("step-2", "execute_trade", "step-1")),
	}
	const goroutines, rounds = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				want := (g + i) % 2
				in, err := PlanInput(plans[want], 1, "req", nil, nil, nil)
				if err != nil {
					errs <- err
					return
				}
				d, err := q.PlanDecision(context.Background(), in)
				if err != nil {
					errs <- err
					return
				}
				if len(d.Deny) != want {
					errs <- errors.New("wrong decision under concurrency")
					return
				}
			}
		})
	}
	wg.Go(func() {
		if _, err := b.Prepare("data.agentd.guard"); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
