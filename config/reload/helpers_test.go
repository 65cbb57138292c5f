package reload_test

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
)

// testDebounce is the quiet period the watch tests inject.
const testDebounce = 20 * time.Millisecond

// stockAgent copies the hooks, data and policies of examples/stock-agent into dir
// (a new temporary directory when dir is empty) as regular files, and returns dir.
func stockAgent(t *testing.T, dir string) string {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	for _, sub := range []string{"hooks", "data", "policies"} {
		copyTree(t, filepath.Join("..", "..", "examples", "stock-agent", sub), filepath.Join(dir, sub))
	}
	return dir
}

// copyTree copies the regular files below src (a symlink to a folder is followed)
// into dst, leaving out OPA test modules.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(src)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// logCounter is a slog handler that counts the records with a given message.
type logCounter struct {
	message string
	n       *atomic.Int64
}

func (h logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h logCounter) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h logCounter) WithGroup(string) slog.Handler            { return h }

func (h logCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.message {
		h.n.Add(1)
	}
	return nil
}

// newReloader returns a reloader of dir that logs to the test output, and its
// registry, after a first reload that must succeed.
func newReloader(t *testing.T, dir string) (*reload.Reloader, *reload.Registry) {
	t.Helper()
	return newReloaderWithLogger(t, dir, slog.New(slog.NewTextHandler(t.Output(), nil)))
}

func newReloaderWithLogger(t *testing.T, dir string, logger *slog.Logger) (*reload.Reloader, *reload.Registry) {
	t.Helper()
	reg := reload.NewRegistry(4)
	r, err := reload.NewReloader(dir, config.Options{}, reg, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reload(t.Context()); err != nil {
		t.Fatalf("first reload: %v\n%s", err, reg.Status().Error)
	}
	return r, reg
}

// startWatch runs Watch until the test ends and returns once the watch is in place,
// which its first reload shows.
func startWatch(t *testing.T, r *reload.Reloader, reg *reload.Registry, debounce time.Duration) {
	t.Helper()
	before := reg.Status().At
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reload.Watch(ctx, r, reload.WatchOptions{Debounce: debounce}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for !reg.Status().At.After(before) {
		select {
		case err := <-done:
			t.Fatalf("Watch returned early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch did not start")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitFor polls cond until it holds, failing the test after a few seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitLive waits until a generation other than old is live and the last reload
// succeeded, and returns it.
func waitLive(t *testing.T, reg *reload.Registry, old string) *config.Generation {
	t.Helper()
	var gen *config.Generation
	waitFor(t, "a new generation", func() bool {
		gen = reg.Current()
		st := reg.Status()
		return gen.ID != old && st.Result == "ok" && st.Generation == gen.ID
	})
	return gen
}

// waitFailed waits until the last reload failed and returns its status.
func waitFailed(t *testing.T, reg *reload.Registry) reload.Status {
	t.Helper()
	waitFor(t, "a failed reload", func() bool { return reg.Status().Result == "error" })
	return reg.Status()
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// editFile rewrites path in place with old replaced by new, which must occur.
func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	writeFile(t, path, strings.Replace(string(data), old, new, 1))
}

// stockStep is a demo-tools/stock-service step with the given capability.
func stockStep(id, capability string) engine.RoutingStep {
	return engine.RoutingStep{
		StepID: id, AgentName: "stock-service", Namespace: "demo-tools", Instruction: capability + " ACME",
		Metadata: map[string]any{"capability": capability, "parameters": map[string]any{"symbol": "ACME", "amount": 100}},
	}
}

func plan(steps ...engine.RoutingStep) *engine.RoutingPlan {
	return &engine.RoutingPlan{PlanID: "p1", OriginalRequest: "ACME", Steps: steps}
}

// afterPlanning runs the after_planning stage of gen on p.
func afterPlanning(t *testing.T, gen *config.Generation, p *engine.RoutingPlan) error {
	t.Helper()
	pctx := &engine.PipelineContext{Request: "ACME", Metadata: map[string]any{}, Enrichments: map[string]any{}}
	_, err := gen.Pipeline.AfterPlanning(t.Context(), pctx, p, nil, nil)
	return err
}

// requireRejected checks that gen's required after_planning hook rejects p.
func requireRejected(t *testing.T, gen *config.Generation, p *engine.RoutingPlan) {
	t.Helper()
	err := afterPlanning(t, gen, p)
	if _, ok := engine.AsRequiredAfterPlanningError(err); !ok {
		t.Fatalf("generation %s: plan not rejected by the required hook: %v", gen.ID, err)
	}
}

func requireAllowed(t *testing.T, gen *config.Generation, p *engine.RoutingPlan) {
	t.Helper()
	if err := afterPlanning(t, gen, p); err != nil {
		t.Fatalf("generation %s: plan rejected: %v", gen.ID, err)
	}
}

// tenantContext runs the before_planning stage of gen for tenant acme and returns the
// rag_context enrichment.
func tenantContext(t *testing.T, gen *config.Generation) any {
	t.Helper()
	pctx := &engine.PipelineContext{
		Request:     "price of ACME at " + time.Now().String(),
		Metadata:    map[string]any{"tenant": "acme"},
		Enrichments: map[string]any{},
	}
	sc, err := gen.Pipeline.BeforePlanning(t.Context(), pctx, engine.NewGate(map[string]string{"tenant": "acme"}, false), nil)
	if err != nil || sc != nil {
		t.Fatalf("before_planning: short circuit %v, error %v", sc, err)
	}
	return pctx.Enrichments["rag_context"]
}
