package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/cmd/agentd/internal/replay"
	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/decisionlog"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/internal/stocktest"
)

// inert runs the stock agent's cache and rate-limit steps against services that hold
// nothing, as the shadow and replay do.
var inert = config.Options{Services: compare.Services(nil)}

func brokerStep(id string, amount float64) engine.RoutingStep {
	return engine.RoutingStep{StepID: id, AgentName: "broker", Namespace: "demo-tools", Instruction: "buy",
		Metadata: map[string]any{"capability": "execute_trade", "parameters": map[string]any{"amount": amount}}}
}

func quoteStep(id string) engine.RoutingStep {
	return engine.RoutingStep{StepID: id, AgentName: "stock-service", Namespace: "demo-tools", Instruction: "quote",
		Metadata: map[string]any{"capability": "stock_quote", "parameters": map[string]any{"symbol": "ACME"}}}
}

// tradeRecord is the record of a request whose first phase (a broker trade of amount)
// was accepted and checked, then finished; a second phase (a stock-service trade) was
// rejected by the allow-list; and whose inference check and a mismatched call cannot
// be replayed from a record.
func tradeRecord(id string, amount float64) *engine.ExecutionRecord {
	one := &engine.RoutingPlan{PlanID: "p1", PhaseNumber: 1, Steps: []engine.RoutingStep{brokerStep("step-1", amount), quoteStep("step-2")}}
	bad := brokerStep("step-3", 1)
	bad.AgentName = "stock-service"
	two := &engine.RoutingPlan{PlanID: "p2", PhaseNumber: 2, Steps: []engine.RoutingStep{bad}}
	return &engine.ExecutionRecord{
		SchemaVersion: engine.ExecutionRecordVersion, RequestID: id, Status: engine.RecordFailed,
		PipelineHooks: []engine.Invocation{{HookName: "allowed-operations", Phase: engine.StageAfterPlanning, PlanPhase: 1, DecisionID: id + "-plan1"}},
		Phases:        []engine.PhaseRecord{{Phase: 1, Plan: one}},
		Rejections: []engine.PlanRejection{{DecisionID: id + "-plan2", Phase: 2, Cause: engine.CausePolicyDenied, Plan: two,
			Violations: []engine.Violation{{Code: "capability_not_allowed", StepID: "step-3", Message: "no"}}}},
		Operations: []engine.OperationRecord{
			{DecisionID: id + "-check1", Operation: op.ToolCall, StepID: "step-1", Namespace: "demo-tools", AgentName: "broker",
				Capability: "execute_trade", Outcome: engine.CheckAllow, Binding: engine.BindingStrict,
				Finish: &engine.FinishRecord{Status: engine.RunSucceeded}},
			{DecisionID: id + "-check2", Operation: op.ToolCall, StepID: "step-1", Namespace: "demo-tools", AgentName: "broker",
				Capability: "execute_trade", Outcome: engine.CheckDeny, Code: engine.CodeStepAlreadyExecuted, Guard: engine.BindingGuard, Binding: engine.BindingStrict},
			{DecisionID: id + "-check3", Operation: op.Inference, Outcome: engine.CheckAllow},
			{DecisionID: id + "-check4", Operation: op.ToolCall, StepID: "step-2", Namespace: "demo-tools", AgentName: "stock-service",
				Capability: "stock_quote", Outcome: engine.CheckDeny, Code: engine.CodePlanMismatch, Guard: engine.BindingGuard, Binding: engine.BindingStrict},
		},
	}
}

func encode(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestRun_RecordsAgainstAStricterCandidate(t *testing.T) {
	set, err := replay.Read(strings.NewReader(encode(t, []*engine.ExecutionRecord{tradeRecord("big", 8000), tradeRecord("small", 3000)})))
	if err != nil {
		t.Fatal(err)
	}
	same := replay.Run(context.Background(), stocktest.Load(t, inert), set)
	if same.Changed() || same.Plans != 4 || same.Checks != 4 || same.Unchanged != 8 || len(same.Skips) != 4 || same.Requests != 2 {
		t.Fatalf("the live config itself: %+v, want 8 unchanged decisions and 4 skipped", same)
	}
	res := replay.Run(context.Background(), stocktest.Load(t, inert, stocktest.Stricter...), set)
	got := map[string]compare.Change{}
	for _, d := range res.Differences {
		got[d.Decision.DecisionID] = d.Change
	}
	want := map[string]compare.Change{"big-plan1": compare.NewlyDenied, "small-plan1": compare.NewlyDenied, "big-check1": compare.NewlyDenied}
	if len(got) != len(want) {
		t.Fatalf("differences %v, want %v", got, want)
	}
	for id, c := range want {
		if got[id] != c {
			t.Errorf("decision %s: %q, want %q", id, got[id], c)
		}
	}
	var out bytes.Buffer
	res.Print(&out)
	for _, line := range []string{"newly denied (3):", "request big: tool_call step-1 (execute_trade) [big-check1]  allowed -> denied trade_limit",
		"request small: after_planning phase 1 [small-plan1]  accepted -> rejected: capability_not_allowed (step-1)",
		"the record keeps no call of inference checks", "3 newly denied, 0 newly allowed, 0 changed, 5 unchanged, 4 skipped"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q:\n%s", line, out.String())
		}
	}
	var doc struct {
		Differences []map[string]any `json:"differences"`
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil || json.Unmarshal(js.Bytes(), &doc) != nil || len(doc.Differences) != 3 {
		t.Fatalf("JSON result: %v\n%s", err, js.String())
	}
}

// Every form agentd writes records in reads alike; a record of another schema version
// is skipped and named, and so is a list summary in a file.
func TestRead_Forms(t *testing.T) {
	rec := tradeRecord("r", 8000)
	line := encode(t, rec)
	old := *rec
	old.SchemaVersion, old.RequestID = 0, "old"
	future := *rec
	future.SchemaVersion, future.RequestID = 2, "future"
	for name, input := range map[string]string{
		"one record":        line,
		"a list":            "[" + line + "]",
		"JSON lines":        line + "\n" + encode(t, &old) + "\n",
		"a page of records": `{"records":[` + line + `],"next_cursor":""}`,
	} {
		set, err := replay.Read(strings.NewReader(input))
		if err != nil || len(set.Decisions) != 4 {
			t.Errorf("%s: %d decisions, %v", name, len(set.Decisions), err)
		}
	}
	set, err := replay.Read(strings.NewReader(encode(t, []any{&old, &future, map[string]any{"request_id": "s", "revision": 3}})))
	if err != nil {
		t.Fatal(err)
	}
	reasons := []string{"without a schema_version", "schema version 2; replay reads version 1", "a record summary"}
	for i, want := range reasons {
		if i >= len(set.Skips) || !strings.Contains(set.Skips[i].Reason, want) {
			t.Errorf("skips %+v: want %q at %d", set.Skips, want, i)
		}
	}
	for _, bad := range []string{`{"x":1}`, `[1]`, `"text"`, `{"request_id":`} {
		if _, err := replay.Read(strings.NewReader(bad)); err == nil {
			t.Errorf("%s read without error", bad)
		}
	}
}

// A decision log's events replay too: the plan with the input it had, the check bound
// against the plan the log shows accepted.
func TestRun_DecisionLogEvents(t *testing.T) {
	plan := &engine.RoutingPlan{PlanID: "p1", PhaseNumber: 1, Steps: []engine.RoutingStep{brokerStep("step-1", 8000)}}
	at := time.Now().UTC()
	events := []decisionlog.Event{
		{SchemaVersion: 1, Kind: "stage", DecisionID: "d1", Timestamp: at, RequestID: "r", Stage: engine.StageAfterPlanning, Outcome: "accepted",
			Input: map[string]any{"request": "buy", "plan": plan}, Output: map[string]any{"accepted_plan": plan}, Erased: []string{"metadata.email"}},
		{SchemaVersion: 1, Kind: "check", DecisionID: "d2", Timestamp: at.Add(time.Millisecond), RequestID: "r", Operation: op.ToolCall, StepID: "step-1", Outcome: "allowed",
			Input: map[string]any{"call": map[string]any{"operation": "tool_call", "request_id": "r", "step_id": "step-1", "namespace": "demo-tools",
				"agent_name": "broker", "capability": "execute_trade", "parameters": map[string]any{"amount": 8000}}}},
		{SchemaVersion: 1, Kind: "check", DecisionID: "d3", Timestamp: at.Add(2 * time.Millisecond), RequestID: "r", Operation: op.ToolCall, StepID: "step-1", Outcome: "allowed"},
		{SchemaVersion: 1, Kind: "shadow", DecisionID: "d2", Timestamp: at, RequestID: "r", Outcome: "allowed"},
		{SchemaVersion: 9, Kind: "stage", DecisionID: "d4", Timestamp: at, RequestID: "r", Stage: engine.StageAfterPlanning, Outcome: "accepted"},
	}
	var lines []string
	for _, e := range events {
		lines = append(lines, encode(t, e))
	}
	set, err := replay.Read(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Decisions) != 2 || len(set.Skips) != 2 {
		t.Fatalf("%d decisions, skips %+v: want the plan and the first check, the payload-less check and the v9 event skipped", len(set.Decisions), set.Skips)
	}
	res := replay.Run(context.Background(), stocktest.Load(t, inert, stocktest.Stricter...), set)
	if len(res.Differences) != 2 || res.Differences[1].Candidate.Denial == nil || res.Differences[1].Candidate.Denial.Code != "trade_limit" {
		t.Fatalf("differences %+v: want the plan and the check newly denied", res.Differences)
	}
	var out bytes.Buffer
	res.Print(&out)
	if !strings.Contains(out.String(), "replayed with metadata.email masked") {
		t.Errorf("output does not say the payload was masked:\n%s", out.String())
	}
}

// Fetch follows the records list page by page, reads each record whole, and sends the
// token.
func TestFetch_FollowsPages(t *testing.T) {
	records := map[string]*engine.ExecutionRecord{"a": tradeRecord("a", 8000), "b": tradeRecord("b", 3000)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/executions", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.URL.Query().Get("status") != "failed" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Query().Get("cursor") == "" {
			_, _ = w.Write([]byte(`{"records":[{"request_id":"a","revision":3}],"next_cursor":"c2"}`))
			return
		}
		_, _ = w.Write([]byte(`{"records":[{"request_id":"b","revision":3}]}`))
	})
	mux.HandleFunc("GET /v1/executions/{id}", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(records[r.PathValue("id")])
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	set, err := replay.Fetch(context.Background(), srv.Client(), srv.URL+"/v1/executions?status=failed", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Decisions) != 8 {
		t.Fatalf("%d decisions from two pages, want 8", len(set.Decisions))
	}
	if _, err := replay.Fetch(context.Background(), srv.Client(), srv.URL, "wrong"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a refused token: %v", err)
	}
}
