package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/api"
	"github.com/agentd-dev/agentd/api/client"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/server"
)

const (
	adminToken = "admin-token"
	otherToken = "tenant-other-token"
	quotePlan  = `{"plan_id":"p1","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote","metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME"}}}]}`
	tradePlan  = `{"plan_id":"p2","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":5}}}]}`
)

// daemon serves the stage API over examples/stock-agent as agentd serve does (the
// host builds the driver), on states (nil: memory), with an admin token and a token
// bound to tenant "other". It counts the HTTP calls it receives; with live false no
// generation is live.
func daemon(t *testing.T, states engine.StateStore, live bool) (string, *atomic.Int64) {
	t.Helper()
	registry := reload.NewRegistry(2)
	if live {
		gen, err := config.Load(filepath.Join("..", "..", "examples", "stock-agent"), config.Options{})
		if err != nil {
			t.Fatal(err)
		}
		registry.Swap(gen)
	}
	mem := store.NewMemory(store.MemoryOptions{})
	if states == nil {
		states = mem
	}
	driver, err := engine.NewDriver(engine.DriverConfig{Generations: registry, States: states, Records: mem, KeepPlans: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := server.New(server.Config{Registry: registry, Driver: driver, Records: mem})
	if err != nil {
		t.Fatal(err)
	}
	h := svc.Handler(server.HTTPOptions{Tokens: []server.Token{
		{SHA256: sha256.Sum256([]byte(adminToken)), Role: server.RoleAdmin},
		{SHA256: sha256.Sum256([]byte(otherToken)), Role: server.RoleOrchestrator, Tenant: "other"},
	}})
	calls := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls
}

func newClient(t *testing.T, base, token string) *client.Client {
	t.Helper()
	c, err := client.New(base, client.Options{Token: token, MaxRetries: 2, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func plan(t *testing.T, text string) *engine.RoutingPlan {
	t.Helper()
	var p engine.RoutingPlan
	if err := json.Unmarshal([]byte(text), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// TestClient_EveryRoute drives one request through every route of the stage API and
// reads it back, as the stock example's walkthrough does with curl.
func TestClient_EveryRoute(t *testing.T) {
	base, _ := daemon(t, nil, true)
	c := newClient(t, base, adminToken)
	ctx := context.Background()
	text := "What is ACME trading at?"
	bp, err := c.BeforePlanning(ctx, &api.BeforePlanningRequest{RequestID: "quote", Request: &text, Metadata: map[string]any{"tenant": "acme"}})
	if err != nil || bp.Enrichments["rag_context"] != "Tenant: acme" || bp.ShortCircuit != nil {
		t.Fatalf("before_planning: %+v, %v", bp, err)
	}
	ap, err := c.AfterPlanning(ctx, &api.AfterPlanningRequest{RequestID: "quote", Plan: plan(t, quotePlan), Explain: true})
	if err != nil || len(ap.Plan.Steps) != 1 || ap.Plan.Steps[0].StepID != "step-1" || len(ap.Explanation) == 0 {
		t.Fatalf("after_planning: %+v, %v", ap, err)
	}
	call := func(capability string) *api.OperationCheckRequest {
		return &api.OperationCheckRequest{Operation: op.ToolCall, Call: &op.Call{RequestID: "quote", StepID: "step-1", Namespace: "demo-tools",
			AgentName: "stock-service", Capability: capability, Parameters: map[string]any{"symbol": "ACME"}}}
	}
	denied, err := c.CheckOperation(ctx, call("execute_trade"))
	if err != nil || denied.Allowed || denied.Denial == nil || denied.Denial.Code != "plan_mismatch" {
		t.Fatalf("a check outside the plan: %+v, %v", denied, err)
	}
	if ok, err := c.CheckOperation(ctx, call("stock_quote")); err != nil || !ok.Allowed {
		t.Fatalf("the plan's check: %+v, %v", ok, err)
	}
	fin, err := c.FinishOperation(ctx, &api.OperationFinishRequest{RequestID: "quote", StepID: "step-1", Status: engine.RunSucceeded, Response: map[string]any{"price": 182.5}})
	if err != nil || fin.Status != engine.RunSucceeded {
		t.Fatalf("finish: %+v, %v", fin, err)
	}
	ae, err := c.AfterExecution(ctx, &api.AfterExecutionRequest{RequestID: "quote", Result: &engine.ExecutionResult{PlanID: "p1", Success: true,
		Steps: []engine.StepResult{{StepID: "step-1", AgentName: "stock-service", Namespace: "demo-tools", Capability: "stock_quote", Success: true}}}})
	if err != nil || len(ae.Invocations) == 0 {
		t.Fatalf("after_execution: %+v, %v", ae, err)
	}
	as, err := c.AfterSynthesis(ctx, &api.AfterSynthesisRequest{RequestID: "quote", Response: new("ACME trades at 182.50 USD. Questions: ir@acme.example")})
	if err != nil || as.Response != "ACME trades at 182.50 USD. Questions: [REDACTED]" {
		t.Fatalf("after_synthesis: %+v, %v", as, err)
	}
	rec, err := c.Execution(ctx, "quote")
	if err != nil || rec.Status != engine.RecordSucceeded || len(rec.Operations) != 2 {
		t.Fatalf("execution: %+v, %v", rec, err)
	}
	page, err := c.Executions(ctx, store.Query{IDContains: "quo", Status: engine.RecordSucceeded, Limit: 5})
	if err != nil || len(page.Records) != 1 || page.Records[0].RequestID != "quote" {
		t.Fatalf("executions: %+v, %v", page, err)
	}
	st, err := c.Status(ctx)
	if err != nil || st.Generation == "" || len(st.Hooks[engine.StageAfterPlanning]) == 0 {
		t.Fatalf("status: %+v, %v", st, err)
	}
}

// downStates is a request store whose backend is unreachable.
type downStates struct{}

func (downStates) GetRequest(context.Context, string) (*engine.RequestState, bool, error) {
	return nil, false, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}
func (downStates) PutRequest(context.Context, *engine.RequestState, time.Duration) error {
	return fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}

// TestClient_Errors: each error answer is an *api.Error of its status and type, and
// only the retryable refusals are retried, as often as MaxRetries allows.
func TestClient_Errors(t *testing.T) {
	text := "Buy 100 ACME"
	cases := map[api.ErrorType]struct {
		states engine.StateStore
		live   bool
		token  string
		call   func(ctx context.Context, c *client.Client) error
		status int
		calls  int64
	}{
		api.TypeMissingField: {nil, true, adminToken, func(ctx context.Context, c *client.Client) error {
			_, err := c.BeforePlanning(ctx, &api.BeforePlanningRequest{RequestID: "r"})
			return err
		}, 400, 1},
		api.TypeRequiredAfterPlanning: {nil, true, adminToken, func(ctx context.Context, c *client.Client) error {
			_, err := c.AfterPlanning(ctx, &api.AfterPlanningRequest{RequestID: "trade", Request: &text, Plan: plan(t, tradePlan)})
			return err
		}, 403, 1},
		api.TypeTenantForbidden: {nil, true, otherToken, func(ctx context.Context, c *client.Client) error {
			_, err := c.BeforePlanning(ctx, &api.BeforePlanningRequest{RequestID: "acme-1", Request: &text, Metadata: map[string]any{"tenant": "acme"}})
			return err
		}, 403, 1},
		api.TypeNotFound: {nil, true, adminToken, func(ctx context.Context, c *client.Client) error {
			_, err := c.Execution(ctx, "nobody")
			return err
		}, 404, 1},
		api.TypeUnauthorized: {nil, true, "wrong", func(ctx context.Context, c *client.Client) error {
			_, err := c.Status(ctx)
			return err
		}, 401, 1},
		api.TypeNotReady: {nil, false, adminToken, func(ctx context.Context, c *client.Client) error {
			_, err := c.BeforePlanning(ctx, &api.BeforePlanningRequest{RequestID: "r", Request: &text})
			return err
		}, 503, 1},
		api.TypeStoreUnavailable: {downStates{}, true, adminToken, func(ctx context.Context, c *client.Client) error {
			_, err := c.BeforePlanning(ctx, &api.BeforePlanningRequest{RequestID: "r", Request: &text})
			return err
		}, 503, 3},
	}
	for typ, tc := range cases {
		t.Run(string(typ), func(t *testing.T) {
			base, calls := daemon(t, tc.states, tc.live)
			err := tc.call(context.Background(), newClient(t, base, tc.token))
			var e *api.Error
			if !errors.As(err, &e) || e.Type != typ || e.Status != tc.status {
				t.Fatalf("error %v (%#v), want a %d %s", err, e, tc.status, typ)
			}
			if n := calls.Load(); n != tc.calls {
				t.Errorf("%d HTTP calls, want %d", n, tc.calls)
			}
		})
	}
}

// TestClient_RetriesStopWithTheContext: a cancelled context ends the retries.
func TestClient_RetriesStopWithTheContext(t *testing.T) {
	base, calls := daemon(t, downStates{}, true)
	c, err := client.New(base, client.Options{Token: adminToken, MaxRetries: 1000, Backoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	text := "hi"
	go func() {
		_, err := c.BeforePlanning(ctx, &api.BeforePlanningRequest{RequestID: "r", Request: &text})
		done <- err
	}()
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil || calls.Load() != 1 {
		t.Fatalf("after the cancel: %v, %d calls", err, calls.Load())
	}
}

func TestNew_RefusesABadBaseURL(t *testing.T) {
	for _, base := range []string{"", "127.0.0.1:8080", "ftp://x", "http://"} {
		if _, err := client.New(base, client.Options{}); err == nil {
			t.Errorf("New(%q) succeeded", base)
		}
	}
}

// TestClient_Approvals: a trade the stock example's trade-limit holds is listed,
// decided once (a re-sent approval is the same, a rejection then approval_decided),
// and passes its next check.
func TestClient_Approvals(t *testing.T) {
	base, _ := daemon(t, nil, true)
	c := newClient(t, base, adminToken)
	ctx := context.Background()
	text := "Buy ACME for 25000"
	if _, err := c.BeforePlanning(ctx, &api.BeforePlanningRequest{RequestID: "big", Request: &text}); err != nil {
		t.Fatal(err)
	}
	broker := `{"plan_id":"p3","steps":[{"step_id":"step-1","agent_name":"broker","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"symbol":"ACME","amount":25000}}}]}`
	if _, err := c.AfterPlanning(ctx, &api.AfterPlanningRequest{RequestID: "big", Plan: plan(t, broker)}); err != nil {
		t.Fatal(err)
	}
	check := &api.OperationCheckRequest{Operation: op.ToolCall, Call: &op.Call{RequestID: "big", StepID: "step-1", Namespace: "demo-tools",
		AgentName: "broker", Capability: "execute_trade", Parameters: map[string]any{"symbol": "ACME", "amount": 25000}}}
	held, err := c.CheckOperation(ctx, check)
	if err != nil || held.Allowed || held.Denial.Code != engine.DenialApprovalRequired || held.Approval == nil || held.Approval.Status != engine.ApprovalPending {
		t.Fatalf("held check: %+v, %v", held, err)
	}
	list, err := c.Approvals(ctx, engine.ApprovalFilter{Status: engine.ApprovalPending, RequestID: "big"})
	if err != nil || len(list.Approvals) != 1 || list.Approvals[0].ID != held.Approval.ID {
		t.Fatalf("pending approvals: %+v, %v", list, err)
	}
	decided, err := c.DecideApproval(ctx, held.Approval.ID, &api.ApprovalDecisionRequest{Decision: engine.DecisionApprove, Comment: "ok"})
	if err != nil || decided.Status != engine.ApprovalApproved || decided.DecidedBy == "" {
		t.Fatalf("approve: %+v, %v", decided, err)
	}
	if again, err := c.DecideApproval(ctx, held.Approval.ID, &api.ApprovalDecisionRequest{Decision: engine.DecisionApprove}); err != nil || again.Comment != "ok" {
		t.Fatalf("a re-sent approval: %+v, %v", again, err)
	}
	var e *api.Error
	if _, err := c.DecideApproval(ctx, held.Approval.ID, &api.ApprovalDecisionRequest{Decision: engine.DecisionReject}); !errors.As(err, &e) || e.Status != http.StatusConflict || e.Type != api.TypeApprovalDecided {
		t.Fatalf("reject after approve: %v; want 409 approval_decided", err)
	}
	if got, err := c.Approval(ctx, held.Approval.ID); err != nil || got.Status != engine.ApprovalApproved {
		t.Fatalf("approval: %+v, %v", got, err)
	}
	if ok, err := c.CheckOperation(ctx, check); err != nil || !ok.Allowed || ok.Approval == nil || ok.Approval.ID != held.Approval.ID {
		t.Fatalf("the approved check: %+v, %v", ok, err)
	}
}
