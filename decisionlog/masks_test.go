package decisionlog

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/internal/capture"
)

// A mask on one step parameter path reaches every copy of that parameter in every
// event a request leaves, in both formats: the plan review's plan and accepted plan,
// the execution report's result steps, and the tool call's check. Every sink gets the
// masked event, and each event names the copies it masked.
func TestLogger_StepParameterMaskCoversEveryCopy(t *testing.T) {
	gen, rules := loadRules(t, "decision_log: {mask: ['plan.steps[*].metadata.parameters.account']}\n")
	const secret = "DE-ACCOUNT-7"
	file, path := tempFileSink(t)
	endpoint := &capture.Bodies{}
	srv := httptest.NewServer(endpoint)
	defer srv.Close()
	post, err := NewHTTPSink(HTTPOptions{URL: srv.URL, BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	collector := &opaCollector{}
	opaSrv := httptest.NewServer(collector)
	defer opaSrv.Close()
	opa, err := NewOPASink(OPAOptions{HTTPOptions: HTTPOptions{URL: opaSrv.URL, BatchSize: 3, Interval: 5 * time.Millisecond},
		Labels: map[string]string{"id": "replica-1", "version": "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	var logBuf capture.Buffer
	l, err := New(Options{Rules: rules, Sinks: []Sink{NewLogSink(&logBuf, nil, true), file, post, opa}})
	if err != nil {
		t.Fatal(err)
	}

	review := stageReport("r1", gen)
	review.Plan.Steps[0].Metadata["parameters"] = map[string]any{"account": secret, "amount": 5.0}
	execution := &engine.StageReport{DecisionID: engine.NewDecisionID(), RequestID: "r1", Generation: gen, Stage: engine.StageAfterExecution,
		Outcome: engine.OutcomeCompleted, Started: time.Now(), Request: "quote ACME",
		Result: &engine.ExecutionResult{PlanID: "p1", Steps: []engine.StepResult{{StepID: "step-1", AgentName: "a", Capability: "quote",
			Parameters: map[string]any{"account": secret, "amount": 5.0}, Response: "ok", Success: true}}}}
	check := checkReport("r1", gen)
	check.Call.Parameters = map[string]any{"account": secret, "amount": 5.0}
	ctx := context.Background()
	l.Staged(ctx, review)
	l.Staged(ctx, execution)
	l.Checked(ctx, check)
	for deadline := time.Now().Add(10 * time.Second); collector.received() < 3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	closeLogger(t, l)

	collector.mu.Lock()
	opaText := strings.Join(collector.raw, "\n")
	collector.mu.Unlock()
	for sink, text := range map[string]string{"log": logBuf.String(), "http": endpoint.All(), "file": readFile(t, path), "opa": opaText} {
		if strings.Contains(text, secret) {
			t.Errorf("the %s sink got the masked account:\n%s", sink, text)
		}
		if n := strings.Count(text, `"amount":5`); n < 4 {
			t.Errorf("the %s sink holds %d amounts, want the 4 copies no mask names:\n%s", sink, n, text)
		}
	}
	if !strings.Contains(opaText, `"accepted_plan.steps.*.metadata.parameters.account"`) || !strings.Contains(opaText, `"call.parameters.account"`) {
		t.Errorf("the OPA events do not name the copies they masked:\n%s", opaText)
	}
	events := readEvents(t, path)
	if len(events) != 3 {
		t.Fatalf("%d events, want 3", len(events))
	}
	for i, want := range [][]string{
		{"plan.steps[*].metadata.parameters.account", "accepted_plan.steps.*.metadata.parameters.account"},
		{"result.steps.*.parameters.account"},
		{"call.parameters.account"},
	} {
		if got := events[i].Erased; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("event %d erased %q, want %q", i, got, want)
		}
	}
}
