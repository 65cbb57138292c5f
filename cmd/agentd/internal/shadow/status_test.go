package shadow_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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
	svc, err := server.New(server.Config{Registry: registry, Driver: driver, Records: mem, Shadow: func() any { return sh.Summary() }})
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
