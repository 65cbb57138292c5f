package decisionlog

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// loadRules compiles a config directory holding one HookSet with body and returns its
// generation's id and the Rules of a registry that keeps only it (RulesOf).
func loadRules(t testing.TB, body string) (string, func(string) (*config.DecisionLog, bool)) {
	t.Helper()
	dir := t.TempDir()
	doc := "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: log}\n" + body
	if err := os.MkdirAll(filepath.Join(dir, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hooks", "log.yaml"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	registry := reload.NewRegistry(1)
	registry.Swap(gen)
	return gen.ID, RulesOf(registry)
}

// metrics returns a meter provider and a function that reads a counter's value for
// the attributes given as "key=value" pairs (all must match).
func metrics(t testing.TB) (*sdkmetric.MeterProvider, func(name string, attrs ...string) int64) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	return mp, func(name string, attrs ...string) int64 {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		var total int64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				sum, ok := m.Data.(metricdata.Sum[int64])
				if m.Name != name || !ok {
					continue
				}
			points:
				for _, p := range sum.DataPoints {
					for _, kv := range attrs {
						k, v, _ := strings.Cut(kv, "=")
						if got, ok := p.Attributes.Value(attribute.Key(k)); !ok || got.AsString() != v {
							continue points
						}
					}
					total += p.Value
				}
			}
		}
		return total
	}
}

// stageReport is an after_planning report of request id on generation gen, with an
// e-mail address in its metadata.
func stageReport(id, gen string) *engine.StageReport {
	plan := &engine.RoutingPlan{PlanID: "p1", PhaseNumber: 1, Steps: []engine.RoutingStep{{StepID: "step-1", Namespace: "ns", AgentName: "a",
		Instruction: "quote", Metadata: map[string]any{"capability": "quote"}}}}
	return &engine.StageReport{
		DecisionID: engine.NewDecisionID(), RequestID: id, Generation: gen, PolicyRevision: "r1", Stage: engine.StageAfterPlanning,
		Outcome: engine.OutcomeAccepted, Started: time.Now(), Duration: 1500 * time.Microsecond,
		Invocations: []engine.Invocation{{HookName: "review", Phase: engine.StageAfterPlanning, Status: engine.InvocationSucceeded,
			Decision: &engine.DecisionRecord{FailurePolicy: engine.FailClosed, Action: engine.ActionContinue, Reason: engine.ReasonAccepted}}},
		Request: "quote ACME", Metadata: map[string]any{"email": "ann@example.com", "tenant": "acme"},
		Enrichments: map[string]any{"rag_context": "Tenant: acme"}, Plan: plan, Accepted: plan,
	}
}

// checkReport is a denied tool_call check of request id.
func checkReport(id, gen string) *engine.CheckReport {
	return &engine.CheckReport{
		DecisionID: engine.NewDecisionID(), Generation: gen, PolicyRevision: "r1", Outcome: engine.OutcomeDenied, Started: time.Now(),
		Call: op.Call{Operation: op.ToolCall, RequestID: id, StepID: "step-1", Namespace: "ns", AgentName: "a", Capability: "trade",
			Parameters: map[string]any{"amount": 20000.0}},
		Record: &engine.OperationRecord{Outcome: engine.CheckDeny, Code: "trade_limit", Reason: "too much", Guard: "limit", GuardIndex: new(int)},
		Err:    op.Deny("trade_limit", "too much"),
	}
}

// turnReport is an allowed turn check whose call carries the request's metadata.
func turnReport(id, gen string) *engine.CheckReport {
	return &engine.CheckReport{
		DecisionID: engine.NewDecisionID(), Generation: gen, Outcome: engine.OutcomeAllowed, Started: time.Now(),
		Call: op.Call{Operation: op.Turn, RequestID: id, Request: "hello", Metadata: map[string]any{"email": "ann@example.com"}},
	}
}

// readEvents decodes the JSON lines of path.
func readEvents(t testing.TB, path string) []Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Event
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

func closeLogger(t testing.TB, l *Logger) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// tempFileSink is a file sink writing to decisions.log in a temporary directory of t, and
// that file's path.
func tempFileSink(t testing.TB) (Sink, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "decisions.log")
	sink, err := NewFileSink(FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return sink, path
}
