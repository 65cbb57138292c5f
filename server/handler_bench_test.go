package server

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/api"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// BenchmarkHandler_AfterPlanning is one orchestrator call of plan review on the
// stock-agent example through the whole HTTP handler (decode, state, policy, record,
// encode), without the network.
func BenchmarkHandler_AfterPlanning(b *testing.B) {
	gen, err := config.Load("../examples/stock-agent", config.Options{})
	if err != nil {
		b.Fatal(err)
	}
	registry := reload.NewRegistry(1)
	registry.Swap(gen)
	svc, err := newService(hostConfig{Registry: registry, States: store.NewMemory(store.MemoryOptions{}), Records: store.NewMemory(store.MemoryOptions{})})
	if err != nil {
		b.Fatal(err)
	}
	h := svc.Handler(HTTPOptions{})
	plan := `{"plan_id":"p1","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote","metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME"}}}]}`
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		body := `{"request_id":"r` + strconv.Itoa(i) + `","request":"quote ACME","plan":` + plan + `}`
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, newRequest(http.MethodPost, "/v1/hooks/after_planning", strings.NewReader(body)))
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkAuthorize is the authorization of one call among ten tokens, bound to a
// tenant: the SHA-256 of the presented token, ten constant-time comparisons, the
// tenant in the context.
func BenchmarkAuthorize(b *testing.B) {
	var tokens []Token
	for i := range 10 {
		tokens = append(tokens, Token{SHA256: sha256.Sum256([]byte("token-" + strconv.Itoa(i))), Role: RoleOrchestrator, Tenant: "acme"})
	}
	h := authorize(HTTPOptions{Tokens: tokens}, RoleOrchestrator, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	req := newRequest(http.MethodPost, "/v1/hooks/before_planning", nil)
	req.Header.Set("Authorization", "Bearer token-7")
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkDecodeBody is the strict decoding of a 3-step after_planning body, as
// `make bench` sends it (about 1.3 KB).
func BenchmarkDecodeBody(b *testing.B) {
	var steps []string
	for i := 1; i <= 3; i++ {
		n := strconv.Itoa(i)
		steps = append(steps, `{"step_id":"step-`+n+`","namespace":"ns-00`+n+`","agent_name":"agent-00`+n+`","instruction":"plan 1 step `+n+
			`","depends_on":["step-`+n+`"],"metadata":{"capability":"cap_00`+n+`","parameters":{"symbol":"T00`+n+`"}}}`)
	}
	body := `{"request_id":"bench-req-1","request":"Quote the tickers in my watch list and compare them.","metadata":{"tenant":"acme","user":"u-1"},` +
		`"plan":{"plan_id":"plan-1","original_request":"Quote the tickers in my watch list and compare them.","mode":"autonomous",` +
		`"created_at":"2025-01-02T03:04:05Z","phase_number":1,"steps":[` + strings.Join(steps, ",") + `]}}`
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var req api.AfterPlanningRequest
		if e := decodeBody(strings.NewReader(body), 1<<20, &req); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkMetrics_Staged is the metrics of one after_planning call with one hook, on
// the OpenTelemetry SDK as the daemon sets it up (exemplars off).
func BenchmarkMetrics_Staged(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()), sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
	m, err := NewMetrics(mp, nil)
	if err != nil {
		b.Fatal(err)
	}
	r := &engine.StageReport{Stage: engine.StageAfterPlanning, Outcome: engine.OutcomeAccepted, Duration: time.Millisecond,
		Invocations: []engine.Invocation{{HookName: "review", Status: engine.InvocationSucceeded, Decision: &engine.DecisionRecord{Reason: engine.ReasonAccepted}}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.Staged(ctx, r)
	}
}
