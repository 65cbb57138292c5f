package reload_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// allowlistPolicy is a small plan review: every step's capability must be in the
// allow-list.
const allowlistPolicy = `package agentd.plan

deny contains {"code": "capability_not_allowed", "step_id": step.step_id, "message": "not allowed"} if {
	some step in input.plan.steps
	not step.metadata.capability in object.get(data.agentd.allowlist, [step.namespace, step.agent_name], [])
}
`

// versionedConfig writes a config whose before_planning hook sets the enrichment
// "version" to version and whose after_synthesis hook redacts e-mail addresses as
// "[version]"; its required after_planning hook allows stock quotes, not trades. The Rego timeout
// is generous: the race detector on a busy machine is slow.
func versionedConfig(t *testing.T, dir, version string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "policies", "plan.rego"), allowlistPolicy)
	writeFile(t, filepath.Join(dir, "hooks", "10-version.yaml"), fmt.Sprintf(`apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: version}
hooks:
  - name: version
    stage: before_planning
    steps:
      - enrich: {key: version, value: "'%s'"}
`, version))
	writeFile(t, filepath.Join(dir, "hooks", "20-plan.yaml"), `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: plan}
settings: {rego_timeout: 10s}
catalog:
  - namespace: demo-tools
    agent: stock-service
    capabilities:
      - {name: stock_quote, returns: [price]}
      - {name: execute_trade, returns: [order_id]}
hooks:
  - name: allowed-operations
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.agentd.plan}
`)
	writeFile(t, filepath.Join(dir, "hooks", "30-response.yaml"), fmt.Sprintf(`apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: response}
hooks:
  - name: redact
    stage: after_synthesis
    steps:
      - redact: {patterns: [email], replacement: "[%s]"}
`, version))
	writeFile(t, filepath.Join(dir, allowlistFile), `{"allowlist": {"demo-tools": {"stock-service": ["stock_quote"]}}}`)
}

// sequence is what one before_planning → after_planning → after_synthesis run saw.
type sequence struct {
	gen      string // the generation taken at the start
	record   string // the generation its record names
	version  any    // the version enrichment
	response string
	hooks    int
	err      error
}

// runSequence runs the three stages of one request on the live generation, taken once.
func runSequence(ctx context.Context, gen *config.Generation, id string) sequence {
	out := sequence{gen: gen.ID}
	d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &gen.Generation}})
	if err != nil {
		out.err = err
		return out
	}
	sess, err := d.Open(ctx, id, engine.Opening{Text: "quote ACME " + id, Metadata: map[string]any{}})
	if err != nil {
		out.err = err
		return out
	}
	bp, err := sess.BeforePlanning(ctx)
	if err == nil && bp.ShortCircuit != nil {
		err = fmt.Errorf("unexpected short circuit by %s", bp.ShortCircuit.Hook)
	}
	if err != nil {
		out.err = err
		return out
	}
	runtime.Gosched()
	if _, err := sess.AfterPlanning(ctx, plan(stockStep("step-1", "stock_quote")), 0); err != nil {
		out.err = err
		return out
	}
	runtime.Gosched()
	final, err := sess.AfterSynthesis(ctx, "mail jane@example.com")
	if err != nil {
		out.err = err
		return out
	}
	out.response = final.Response
	rec, err := sess.Record(ctx)
	if err != nil {
		out.err = err
		return out
	}
	out.record, out.version, out.hooks = rec.Generation, sess.Context().Enrichments["version"], len(rec.PipelineHooks)
	for _, inv := range rec.PipelineHooks {
		if inv.Status != engine.InvocationSucceeded && out.err == nil {
			out.err = fmt.Errorf("hook %s: %s %s", inv.HookName, inv.Status, inv.Error)
		}
	}
	return out
}

// Stage-call sequences running while the config is reloaded each run on exactly one
// generation: the one they took at the start, which was live, and whose content they
// see in every stage.
func TestReload_ConcurrentCallsEachRunOnOneGeneration(t *testing.T) {
	const (
		reloads   = 50
		workers   = 1000
		perWorker = 2
	)
	dir := t.TempDir()
	versionedConfig(t, dir, "v-init")
	r, reg := newReloader(t, dir)
	requireRejected(t, reg.Current(), plan(stockStep("step-1", "execute_trade")))
	versions := map[string]string{reg.Current().ID: "v-init"} // generation → its content

	// Worker i starts just before reload i%reloads, so calls overlap every reload and
	// every swap.
	results := make([][]sequence, workers)
	var wg sync.WaitGroup
	for k := range reloads {
		for i := k; i < workers; i += reloads {
			wg.Go(func() {
				for j := range perWorker {
					gen := reg.Current()
					results[i] = append(results[i], runSequence(t.Context(), gen, fmt.Sprintf("req-%d-%d", i, j)))
				}
			})
		}
		version := fmt.Sprintf("v%d", k)
		versionedConfig(t, dir, version)
		gen, err := r.Reload(t.Context())
		if err != nil {
			t.Fatalf("reload %d: %v", k, err)
		}
		if _, dup := versions[gen.ID]; dup {
			t.Fatalf("reload %d built generation %s again", k, gen.ID)
		}
		versions[gen.ID] = version
	}
	wg.Wait()

	seen := map[string]int{}
	failed := 0
	for i, seqs := range results {
		for j, s := range seqs {
			want, live := versions[s.gen]
			switch {
			case s.err != nil:
				t.Errorf("sequence %d/%d on %s failed: %v", i, j, s.gen, s.err)
			case !live:
				t.Errorf("sequence %d/%d ran on %s, never live", i, j, s.gen)
			case s.record != s.gen || s.hooks != 3:
				t.Errorf("sequence %d/%d: record names %s with %d hooks, ran on %s", i, j, s.record, s.hooks, s.gen)
			case s.version != want || s.response != "mail ["+want+"]":
				t.Errorf("sequence %d/%d on %s (%s) saw %v and %q", i, j, s.gen, want, s.version, s.response)
			default:
				seen[s.gen]++
				continue
			}
			if failed++; failed == 10 {
				t.Fatal("too many failures")
			}
		}
	}
	if n := len(results) * perWorker; len(seen) < 2 || failed > 0 {
		t.Fatalf("%d sequences, %d failed, over %d generations", n, failed, len(seen))
	}
	t.Logf("%d sequences ran on %d of the %d generations", workers*perWorker, len(seen), len(versions))
}
