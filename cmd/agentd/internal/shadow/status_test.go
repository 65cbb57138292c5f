package shadow_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/cmd/agentd/internal/shadow"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/docs/apitest"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/server"
)

// GET /v1/status with a shadow configuration that disagreed on a check and on an answer matches the document.
func TestOpenAPI_StatusWithShadowMatches(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "examples", "stock-agent")
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	registry := reload.NewRegistry(2)
	registry.Swap(gen)
	sh, err := shadow.New(context.Background(), shadow.Config{Dir: dir, Live: registry})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	// A turn the live guards are said to have denied: the shadow (no turn guards)
	// allows it.
	sh.Checked(context.Background(), &engine.CheckReport{
		DecisionID: engine.NewDecisionID(), Generation: gen.ID, Outcome: engine.OutcomeDenied, Started: time.Now(),
		Call: op.Call{Operation: op.Turn, RequestID: "r1", Request: "hi"}, Err: op.Deny("no_turns", "not today"),
	})
	// An answer the live hooks are said to have left unredacted: the shadow redacts it.
	sh.Staged(context.Background(), &engine.StageReport{
		DecisionID: engine.NewDecisionID(), RequestID: "r2", Generation: gen.ID, Stage: engine.StageAfterSynthesis,
		Outcome: engine.OutcomeCompleted, Started: time.Now(), Request: "who?", Draft: "call +1 415 555 0100", Response: "call +1 415 555 0100",
	})
	deadline := time.Now().Add(10 * time.Second)
	for sh.Summary().Disagreed < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	mem := store.NewMemory(store.MemoryOptions{})
	driver, err := engine.NewDriver(engine.DriverConfig{Generations: registry, States: mem, Records: mem, KeepPlans: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := server.New(server.Config{Registry: registry, Driver: driver, Records: mem, Shadow: func(context.Context) any { return sh.Summary() }})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	svc.Handler(server.HTTPOptions{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/status", nil))
	schema, _ := apitest.Load(t).Response(t, http.MethodGet, "/v1/status", "200")
	apitest.Validate(t, "status with a shadow", schema, rec.Body.Bytes())
	if s := sh.Summary(); s.Disagreed != 2 || s.Changes["newly_allowed"] != 1 || s.Changes["changed"] != 1 || len(s.Recent) != 2 ||
		s.Recent[0].RequestID != "r2" || s.Recent[1].RequestID != "r1" {
		t.Fatalf("summary = %+v, want the redaction changed and the newly allowed turn", s)
	}
}

// A token bound to a tenant sees, in /v1/status, only the shadow disagreements of its
// tenant's requests and none of the daemon-wide counts; an unbound token sees all.
func TestStatus_ShadowIsFilteredByTenant(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "examples", "stock-agent")
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	registry := reload.NewRegistry(2)
	registry.Swap(gen)
	sh, err := shadow.New(context.Background(), shadow.Config{Dir: dir, Live: registry})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	for _, c := range []struct{ id, tenant string }{{"acme-1", "acme"}, {"globex-1", "globex"}, {"none-1", ""}} {
		meta := map[string]any{}
		if c.tenant != "" {
			meta["tenant"] = c.tenant
		}
		sh.Staged(context.Background(), &engine.StageReport{
			DecisionID: engine.NewDecisionID(), RequestID: c.id, Generation: gen.ID, Stage: engine.StageAfterSynthesis, Metadata: meta,
			Outcome: engine.OutcomeCompleted, Started: time.Now(), Request: "who?", Draft: "call +1 415 555 0100", Response: "call +1 415 555 0100",
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for sh.Summary().Disagreed < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	mem := store.NewMemory(store.MemoryOptions{})
	driver, err := engine.NewDriver(engine.DriverConfig{Generations: registry, States: mem, Records: mem, KeepPlans: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := server.New(server.Config{Registry: registry, Driver: driver, Records: mem, Shadow: sh.StatusFor})
	if err != nil {
		t.Fatal(err)
	}
	h := svc.Handler(server.HTTPOptions{Tokens: []server.Token{
		{SHA256: sha256.Sum256([]byte("acme-viewer")), Role: server.RoleViewer, Tenant: "acme"},
		{SHA256: sha256.Sum256([]byte("viewer")), Role: server.RoleViewer},
	}})
	type statusBody struct {
		Shadow *shadow.Summary `json:"shadow"`
	}
	status := func(token string) statusBody {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/v1/status", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(rec, req)
		var body statusBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Shadow == nil {
			t.Fatalf("GET /v1/status = %d %s", rec.Code, rec.Body)
		}
		return body
	}
	ids := func(s *shadow.Summary) (out []string) {
		for _, d := range s.Recent {
			out = append(out, d.RequestID)
		}
		slices.Sort(out)
		return out
	}
	if got := status("acme-viewer").Shadow; !slices.Equal(ids(got), []string{"acme-1"}) || got.Disagreed != 0 || got.Evaluated != 0 || len(got.Changes) != 0 {
		t.Errorf("acme's viewer sees %v (disagreed %d, changes %v), want acme-1 only and no counts", ids(got), got.Disagreed, got.Changes)
	}
	if got := status("viewer").Shadow; !slices.Equal(ids(got), []string{"acme-1", "globex-1", "none-1"}) || got.Disagreed != 3 {
		t.Errorf("an unbound viewer sees %v (disagreed %d), want all three", ids(got), got.Disagreed)
	}
}
