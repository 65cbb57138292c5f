package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/api"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// boomHook panics when the request text is "boom".
type boomHook struct{}

func (boomHook) Name() string { return "boom" }
func (boomHook) BeforePlanning(_ context.Context, pctx *engine.PipelineContext) (*engine.ShortCircuit, error) {
	if pctx.Request == "boom" {
		panic("kaboom")
	}
	return nil, nil
}

func newTestService(t *testing.T, hooks ...engine.Hook) (*Service, *store.Memory) {
	t.Helper()
	p, err := engine.New(hooks)
	if err != nil {
		t.Fatal(err)
	}
	registry := reload.NewRegistry(2)
	registry.Swap(&config.Generation{Generation: engine.Generation{ID: "g-test", Pipeline: p}})
	records := store.NewMemory(store.MemoryOptions{})
	svc, err := newService(hostConfig{Registry: registry, States: records, Records: records})
	if err != nil {
		t.Fatal(err)
	}
	return svc, records
}

func post(h http.Handler, path, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newRequest(http.MethodPost, path, strings.NewReader(body)))
	return rec
}

func TestHandler_HookPanicIs500ForThatCallOnly(t *testing.T) {
	svc, records := newTestService(t, boomHook{})
	h := svc.Handler(HTTPOptions{})
	rec := post(h, "/v1/hooks/before_planning", `{"request_id":"r1","request":"boom"}`)
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"type":"internal"`) {
		t.Fatalf("panic answered %d %s", rec.Code, rec.Body)
	}
	stored, err := records.Get(context.Background(), "r1")
	if err != nil || stored.Status != engine.RecordFailed || stored.Error != "pipeline hook panic: kaboom" ||
		len(stored.PipelineHooks) != 1 || stored.PipelineHooks[0].Decision.Action != engine.ActionPropagatePanic {
		t.Fatalf("record after panic = %+v, %v", stored, err)
	}
	if rec := post(h, "/v1/hooks/before_planning", `{"request_id":"r2","request":"fine"}`); rec.Code != http.StatusOK {
		t.Fatalf("next call answered %d %s", rec.Code, rec.Body)
	}
}

func TestHandler_NotReadyWithoutGeneration(t *testing.T) {
	svc, err := newService(hostConfig{Registry: reload.NewRegistry(1), States: store.NewMemory(store.MemoryOptions{}), Records: store.NewMemory(store.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	h := svc.Handler(HTTPOptions{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("readyz without a generation = %d", rec.Code)
	}
	if rec := post(h, "/v1/hooks/before_planning", `{"request_id":"r","request":"x"}`); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("stage call without a generation = %d %s", rec.Code, rec.Body)
	}
}

func TestService_RequestStaysOnItsGeneration(t *testing.T) {
	svc, records := newTestService(t)
	ctx := context.Background()
	text := "q"
	if _, e := svc.BeforePlanning(ctx, &api.BeforePlanningRequest{RequestID: "r", Request: &text}); e != nil {
		t.Fatal(e)
	}
	p, _ := engine.New(nil)
	svc.cfg.Registry.Swap(&config.Generation{Generation: engine.Generation{ID: "g-next", Pipeline: p}})
	resp, e := svc.AfterSynthesis(ctx, &api.AfterSynthesisRequest{RequestID: "r", Response: &text})
	if e != nil || resp.Generation != "g-test" {
		t.Fatalf("after a swap the request ran on %v (%v), want g-test", resp, e)
	}
	rec, _ := records.Get(ctx, "r")
	if rec.Generation != "g-test" {
		t.Fatalf("record generation = %s", rec.Generation)
	}
}

// downRequests is a request store whose backend is unreachable.
type downRequests struct{}

func (downRequests) GetRequest(context.Context, string) (*engine.RequestState, bool, error) {
	return nil, false, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}
func (downRequests) PutRequest(context.Context, *engine.RequestState, time.Duration) error {
	return fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}

func TestService_StoreUnavailableIs503AndCounted(t *testing.T) {
	p, _ := engine.New(nil)
	registry := reload.NewRegistry(1)
	registry.Swap(&config.Generation{Generation: engine.Generation{ID: "g-test", Pipeline: p}})
	reader := sdkmetric.NewManualReader()
	svc, err := newService(hostConfig{Registry: registry, States: downRequests{}, Records: store.NewMemory(store.MemoryOptions{}),
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	rec := post(svc.Handler(HTTPOptions{}), "/v1/hooks/after_execution", `{"request_id":"r","result":{"plan_id":"p","steps":[],"success":true}}`)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"type":"store_unavailable"`) {
		t.Fatalf("answer = %d %s", rec.Code, rec.Body)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "agentd.stage.calls" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if v, _ := dp.Attributes.Value("outcome"); api.ErrorType(v.AsString()) == api.TypeStoreUnavailable && dp.Value == 1 {
					return
				}
			}
		}
	}
	t.Fatalf("no agentd.stage.calls{outcome=store_unavailable} in %+v", rm)
}

// A failed read of the records is answered as the engine's store refusal maps
// (api.ErrorOf): 503 store_unavailable, with no detail of the store's error.
func TestService_RecordReadFailureIs503(t *testing.T) {
	p, _ := engine.New(nil)
	registry := reload.NewRegistry(1)
	registry.Swap(&config.Generation{Generation: engine.Generation{ID: "g-test", Pipeline: p}})
	svc, err := newService(hostConfig{Registry: registry, Records: downRecords{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/executions/r1", "/v1/executions", "/v1/executions?status=failed"} {
		rec := httptest.NewRecorder()
		svc.Handler(HTTPOptions{}).ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		var body struct{ Error struct{ Type api.ErrorType } }
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusServiceUnavailable ||
			body.Error.Type != api.TypeStoreUnavailable || strings.Contains(rec.Body.String(), "refused") {
			t.Errorf("GET %s = %d %s, want 503 store_unavailable with no detail", path, rec.Code, rec.Body)
		}
	}
}

// acceptHook accepts every plan as it is.
type acceptHook struct{}

func (acceptHook) Name() string { return "accept" }
func (acceptHook) AfterPlanning(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
	return plan, nil
}

// TestService_ResentPlanIsAnsweredFromTheRecord: re-sending the last accepted phase's
// plan (a network retry, a load tool replaying one body) gets that phase's answer again
// and changes nothing; a new plan_id starts the next phase, and so does the same
// plan_id with new step ids (a planner that keeps one plan_id); an older phase's plan is
// not a re-send.
func TestService_ResentPlanIsAnsweredFromTheRecord(t *testing.T) {
	svc, records := newTestService(t, acceptHook{})
	ctx := context.Background()
	planOf := func(id string, steps ...string) *engine.RoutingPlan {
		p := &engine.RoutingPlan{PlanID: id}
		for _, s := range steps {
			p.Steps = append(p.Steps, engine.RoutingStep{StepID: s, AgentName: "a", Namespace: "n", Instruction: "do " + s})
		}
		return p
	}
	record := func() string {
		rec, err := records.Get(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, ph := range rec.Phases {
			out = append(out, ph.Phase)
		}
		for _, inv := range rec.PipelineHooks {
			out = append(out, -inv.PlanPhase)
		}
		return fmt.Sprint(out) // phases, then each review's phase negated
	}
	for i, step := range []struct {
		plan       *engine.RoutingPlan
		phase      int
		wantPhase  int
		wantErr    string
		wantRecord string
	}{
		{planOf("p1", "s1"), 0, 1, "", "[1 -1]"},
		{planOf("p1", "s1"), 0, 1, "", "[1 -1]"},
		{planOf("p1", "s1"), 1, 1, "", "[1 -1]"},
		{planOf("p2", "s2"), 0, 2, "", "[1 2 -1 -2]"},
		{planOf("p2", "s2"), 0, 2, "", "[1 2 -1 -2]"},
		{planOf("p1", "s1"), 0, 0, "repeated_step_id", "[1 2 -1 -2]"},
		{planOf("p3", "s2"), 0, 0, "repeated_step_id", "[1 2 -1 -2]"},
		{planOf("p2", "s3"), 0, 3, "", "[1 2 3 -1 -2 -3]"},
	} {
		resp, e := svc.AfterPlanning(ctx, &api.AfterPlanningRequest{RequestID: "r", Phase: step.phase, Plan: step.plan})
		switch {
		case step.wantErr != "":
			if e == nil || !strings.Contains(e.Message, step.wantErr) {
				t.Fatalf("call %d: %v, want %s", i+1, e, step.wantErr)
			}
		case e != nil:
			t.Fatalf("call %d: %v", i+1, e)
		case resp.Plan.PhaseNumber != step.wantPhase || len(resp.Invocations) != 1 || resp.Invocations[0].PlanPhase != step.wantPhase:
			t.Fatalf("call %d: phase %d with %+v, want phase %d and its review", i+1, resp.Plan.PhaseNumber, resp.Invocations, step.wantPhase)
		}
		if got := record(); got != step.wantRecord {
			t.Fatalf("call %d: record %s, want %s", i+1, got, step.wantRecord)
		}
	}
}

// newRequest is httptest.NewRequest declaring a JSON body, as the browser boundary
// wants of a POST, PUT or PATCH.
func newRequest(method, target string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, target, body)
	if bodyMethod(method) {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}
