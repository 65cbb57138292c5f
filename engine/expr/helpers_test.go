package expr

import (
	"errors"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/op"
)

func newCompiler(t testing.TB, limit uint64) *Compiler {
	t.Helper()
	c, err := NewCompiler(Options{CostLimit: limit})
	if err != nil {
		t.Fatalf("NewCompiler: %v", err)
	}
	return c
}

func mustCompile(t testing.TB, c *Compiler, scope Scope, src string, want Kind) *Program {
	t.Helper()
	p, err := c.Compile(scope, src, want)
	if err != nil {
		t.Fatalf("Compile(%s, %q): %v", scope, src, err)
	}
	return p
}

// wantDiag fails unless err is a *diag.Error of the given kind and returns it.
func wantDiag(t testing.TB, err error, kind diag.Kind) *diag.Error {
	t.Helper()
	var e *diag.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *diag.Error of kind %s", err, err, kind)
	}
	if e.Kind != kind {
		t.Fatalf("error kind = %s (%v), want %s", e.Kind, e, kind)
	}
	return e
}

// wantEvalKind fails unless err is an *EvalError of the given kind and returns it.
func wantEvalKind(t testing.TB, err error, kind EvalKind) *EvalError {
	t.Helper()
	var e *EvalError
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *EvalError of kind %s", err, err, kind)
	}
	if e.Kind != kind {
		t.Fatalf("error kind = %s (%v), want %s", e.Kind, e, kind)
	}
	return e
}

var planTime = time.Date(2025, 3, 1, 12, 30, 0, 500, time.UTC)

func samplePlan() *engine.RoutingPlan {
	terminal := false
	return &engine.RoutingPlan{
		PlanID:          "plan-1",
		OriginalRequest: "buy 10 ACME",
		Mode:            engine.ModeWorkflow,
		CreatedAt:       planTime,
		Terminal:        &terminal,
		PhaseNumber:     1,
		Steps: []engine.RoutingStep{
			{StepID: "s1", AgentName: "quotes", Namespace: "market", Instruction: "quote ACME",
				Metadata: map[string]any{"capability": "get_quote"}},
			{StepID: "s2", AgentName: "broker", Namespace: "market", Instruction: "buy",
				DependsOn: []string{"s1"},
				Metadata:  map[string]any{"capability": "execute_trade", "parameters": map[string]any{"amount": 12000}}},
		},
	}
}

func sampleResult() *engine.ExecutionResult {
	return &engine.ExecutionResult{
		PlanID: "plan-1", Success: false, TotalDuration: 1500 * time.Millisecond, PhaseCount: 1,
		Steps: []engine.StepResult{
			{StepID: "s1", AgentName: "quotes", Capability: "get_quote", Namespace: "market",
				Response: map[string]any{"price": 101.5}, Success: true, Duration: time.Second, Attempts: 1},
			{StepID: "s2", AgentName: "broker", Capability: "execute_trade", Namespace: "market",
				Error: "rejected", Duration: 500 * time.Millisecond, Attempts: 2},
		},
	}
}

func sampleCall(amount any) *op.Call {
	return &op.Call{
		Operation: op.ToolCall, RequestID: "r1", StepID: "s2", AgentName: "broker",
		Capability: "execute_trade", Parameters: map[string]any{"amount": amount},
	}
}
