package builtin_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
)

// header starts every hooks file the tests write.
const header = "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: test}\n"

// catalogYAML declares the agents the test plans use.
const catalogYAML = `catalog:
  - namespace: demo-tools
    agent: stock-service
    capabilities:
      - {name: stock_quote, returns: [price, currency]}
      - {name: execute_trade, returns: [order_id]}
      - {name: news}
`

// allowListJSON allows only stock quotes and news.
const allowListJSON = `{"allowlist": {"demo-tools": {"stock-service": ["stock_quote", "news"]}}}`

// hooks returns a hooks file with the given top-level sections (YAML, indented by two
// spaces under their key as usual).
func hooks(sections ...string) string {
	return header + strings.Join(sections, "")
}

// repoPolicies returns the repository's Rego modules (without their tests) as config
// files under policies/, read once.
var repoPolicies = sync.OnceValue(func() map[string]string {
	files := map[string]string{}
	root := filepath.Join("..", "policies")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".rego") || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files["policies/"+filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("reading ../policies: %v (%d files)", err, len(files)))
	}
	return files
})

// writeConfig writes files (slash path relative to the directory → content) into a new
// temporary config directory and returns it.
func writeConfig(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// load writes files into a config directory and loads it; the test fails on any
// load error.
func load(t testing.TB, files map[string]string, opts ...config.Options) *config.Generation {
	t.Helper()
	var o config.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	gen, err := config.Load(writeConfig(t, files), o)
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	return gen
}

// loadHooks loads a config directory holding only hooks/test.yaml.
func loadHooks(t testing.TB, yaml string, opts ...config.Options) *config.Generation {
	t.Helper()
	return load(t, map[string]string{"hooks/test.yaml": yaml}, opts...)
}

// requestCtx returns a context carrying the request info of request id on gen, a
// request whose first plan phase was accepted.
func requestCtx(gen *config.Generation, id string, gate engine.Gate) context.Context {
	return engine.WithRequestInfo(context.Background(), engine.RequestInfo{ID: id, Generation: gen.ID, Gate: gate, Phase: 1})
}

// noGate is a gate without reserved dimensions, cache reads enabled.
var noGate = engine.NewGate(nil, false)

// beforeRun is the outcome of one before_planning stage run.
type beforeRun struct {
	out  *engine.ShortCircuitOutcome
	err  error
	pctx *engine.PipelineContext
	invs []engine.Invocation
}

// runBefore runs gen's before_planning stage for a request with text and metadata,
// recording into a fresh trail.
func runBefore(t testing.TB, gen *config.Generation, id, text string, metadata map[string]any, gate engine.Gate) beforeRun {
	t.Helper()
	pctx := &engine.PipelineContext{Request: text, Metadata: metadata}
	trail := engine.NewTrail()
	out, err := gen.Pipeline.BeforePlanning(requestCtx(gen, id, gate), pctx, gate, trail)
	return beforeRun{out: out, err: err, pctx: pctx, invs: trail.Invocations()}
}

// runAfter runs gen's after_planning stage on plan, recording into a fresh trail.
func runAfter(t testing.TB, gen *config.Generation, pctx *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, []engine.Invocation, error) {
	t.Helper()
	trail := engine.NewTrail()
	got, err := gen.Pipeline.AfterPlanning(requestCtx(gen, "req-plan", noGate), pctx, plan, nil, trail)
	return got, trail.Invocations(), err
}

// runSynthesis runs gen's after_synthesis stage on response for a request with text
// and metadata, recording into a fresh trail.
func runSynthesis(t testing.TB, gen *config.Generation, ctx context.Context, text string, metadata map[string]any, response string) (string, []engine.Invocation) {
	t.Helper()
	pctx := &engine.PipelineContext{Request: text, Metadata: metadata, Enrichments: map[string]any{}}
	trail := engine.NewTrail()
	got := gen.Pipeline.AfterSynthesis(ctx, pctx, response, trail)
	return got, trail.Invocations()
}

// wantInvocation checks an invocation's hook, status and decision reason, and that its
// error contains errPart ("" means no error).
func wantInvocation(t testing.TB, inv engine.Invocation, hook string, status engine.InvocationStatus, reason engine.Reason, errPart string) {
	t.Helper()
	if inv.HookName != hook || inv.Status != status {
		t.Errorf("invocation = %s/%s, want %s/%s (error %q)", inv.HookName, inv.Status, hook, status, inv.Error)
	}
	if inv.Decision == nil || inv.Decision.Reason != reason {
		t.Errorf("invocation %s decision = %+v, want reason %s", inv.HookName, inv.Decision, reason)
	}
	switch {
	case errPart == "" && inv.Error != "":
		t.Errorf("invocation %s error = %q, want none", inv.HookName, inv.Error)
	case errPart != "" && !strings.Contains(inv.Error, errPart):
		t.Errorf("invocation %s error = %q, want it to contain %q", inv.HookName, inv.Error, errPart)
	}
}

// wantInvocations checks the number of invocations.
func wantInvocations(t testing.TB, invs []engine.Invocation, n int) {
	t.Helper()
	if len(invs) != n {
		t.Fatalf("%d invocations, want %d: %+v", len(invs), n, invs)
	}
}

// quotePlan returns a valid plan of n stock_quote steps, step-1 … step-n, each
// depending on the previous one.
func quotePlan(n int) *engine.RoutingPlan {
	p := &engine.RoutingPlan{
		PlanID:          "plan-1",
		OriginalRequest: "quotes please",
		Mode:            engine.ModeAutonomous,
		CreatedAt:       time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		PhaseNumber:     1,
	}
	symbols := []string{"ACME", "INIT", "GLOBEX", "HOOLI", "UMBRELLA"}
	for i := range n {
		s := engine.RoutingStep{
			StepID:      "step-" + string(rune('1'+i)),
			AgentName:   "stock-service",
			Namespace:   "demo-tools",
			Instruction: "quote " + symbols[i%len(symbols)],
			Metadata: map[string]any{
				"capability": "stock_quote",
				"parameters": map[string]any{"symbol": symbols[i%len(symbols)]},
			},
		}
		if i > 0 {
			s.DependsOn = []string{"step-" + string(rune('0'+i))}
		}
		p.Steps = append(p.Steps, s)
	}
	return p
}

// stepIDs lists a plan's step ids.
func stepIDs(p *engine.RoutingPlan) []string {
	ids := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		ids[i] = s.StepID
	}
	return ids
}

// wantLoadErrors checks that err is a diag.List whose kinds are exactly kinds, and
// returns it.
func wantLoadErrors(t testing.TB, err error, kinds ...diag.Kind) diag.List {
	t.Helper()
	list, ok := diag.AsList(err)
	if !ok {
		t.Fatalf("load error = %v, want a diag.List", err)
	}
	if got := list.Kinds(); !slices.Equal(got, kinds) {
		t.Fatalf("load error kinds = %v, want %v:\n%v", got, kinds, err)
	}
	return list
}
