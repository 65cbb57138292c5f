package reload_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// largeConfig writes 49 enrich hooks (one file each) and the required plan hook, 20
// Rego modules (the plan and lib modules of policies/ and 18 generated ones) and an
// allow-list. It returns the path of enrich hook i.
func largeConfig(t *testing.T, dir string) func(i int) string {
	t.Helper()
	hook := func(i int) string { return filepath.Join(dir, "hooks", fmt.Sprintf("h%02d.yaml", i)) }
	for i := range 49 {
		writeFile(t, hook(i), enrichHook(i, "initial"))
	}
	writeFile(t, filepath.Join(dir, "hooks", "plan.yaml"), `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: plan}
catalog:
  - namespace: demo-tools
    agent: stock-service
    capabilities:
      - {name: stock_quote, returns: [price]}
hooks:
  - name: allowed-operations
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.agentd.plan}
`)
	for _, m := range []string{"plan", "lib"} {
		copyTree(t, filepath.Join("..", "..", "policies", "agentd", m), filepath.Join(dir, "policies", "agentd", m))
	}
	for i := range 18 {
		writeFile(t, filepath.Join(dir, "policies", "extra", fmt.Sprintf("m%02d.rego", i)), fmt.Sprintf(`package agentd.extra.m%02d

limit := %d

deny contains msg if {
	some step in input.plan.steps
	step.metadata.parameters.amount > limit * 1000
	msg := sprintf("step %%s is over %%d", [step.step_id, limit])
}
`, i, i+1))
	}
	writeFile(t, filepath.Join(dir, allowlistFile), `{"allowlist": {"demo-tools": {"stock-service": ["stock_quote"]}}}`)
	return hook
}

func enrichHook(i int, text string) string {
	return fmt.Sprintf(`apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: h%02d}
hooks:
  - name: enrich-%02d
    stage: before_planning
    steps:
      - enrich: {key: k%02d, value: "'%s'"}
`, i, i, i, text)
}

// TestReload_WriteToLive measures the time from a file write to the new generation
// being live, with the default debounce, over 50 edits of a 50-hook, 20-module
// config. It is a measurement, not a check: set AGENTD_RELOAD_LATENCY=1 to run it.
func TestReload_WriteToLive(t *testing.T) {
	if os.Getenv("AGENTD_RELOAD_LATENCY") != "1" {
		t.Skip("set AGENTD_RELOAD_LATENCY=1 to measure write-to-live latency")
	}
	dir := t.TempDir()
	hook := largeConfig(t, dir)
	r, reg := newReloader(t, dir)
	if n := len(reg.Current().Hooks); n != 50 {
		t.Fatalf("config has %d hooks, want 50", n)
	}
	startWatch(t, r, reg, 0)

	const edits = 50
	lat := make([]time.Duration, 0, edits)
	for i := range edits {
		prev := reg.Current().ID
		start := time.Now()
		writeFile(t, hook(i%49), enrichHook(i%49, fmt.Sprintf("edit %d", i)))
		for reg.Current().ID == prev {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("edit %d did not go live: %+v", i, reg.Status())
			}
			time.Sleep(time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	t.Logf("write-to-live over %d edits (debounce 100ms): p50 %v, p95 %v, min %v, max %v",
		edits, lat[edits/2], lat[edits*95/100], lat[0], lat[edits-1])
}
