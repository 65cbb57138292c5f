package server

import (
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine/store"
)

// BenchmarkHandler_AfterPlanning is one orchestrator call of plan review on the
// stock-agent example through the whole HTTP handler (decode, state, policy, record,
// encode), without the network.
func BenchmarkHandler_AfterPlanning(b *testing.B) {
	gen, err := config.Load("../../../../examples/stock-agent", config.Options{})
	if err != nil {
		b.Fatal(err)
	}
	registry := reload.NewRegistry(1)
	registry.Swap(gen)
	svc, err := New(Config{Registry: registry, States: store.NewMemory(store.MemoryOptions{}), Records: store.NewMemory(store.MemoryOptions{})})
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
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/hooks/after_planning", strings.NewReader(body)))
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
	req := httptest.NewRequest(http.MethodPost, "/v1/hooks/before_planning", nil)
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
