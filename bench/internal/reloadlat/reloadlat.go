// Package reloadlat measures reload write-to-live latency: a config of 50 hooks and 20
// Rego modules, watched by reload.Watch with the default debounce, edited 50 times; each
// edit is timed from the file write until the registry's live generation changes.
package reloadlat

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
)

// Result is the latency distribution of the edits.
type Result struct {
	Edits         int
	Hooks         int
	Modules       int
	Debounce      time.Duration
	P50, P95, Max time.Duration
}

// Debounce is reload.Watch's default quiet period, which the measurement keeps.
const Debounce = 100 * time.Millisecond

// Measure writes the config into dir (policies are the repository's modules, of which
// the plan and lib ones are used), starts a watch and times edits edits.
func Measure(ctx context.Context, dir string, policies []fixture.File, edits int) (Result, error) {
	hook, modules, err := writeConfig(dir, policies)
	if err != nil {
		return Result{}, err
	}
	logger := slog.New(slog.DiscardHandler)
	reg := reload.NewRegistry(4)
	r, err := reload.NewReloader(dir, config.Options{}, reg, logger, nil)
	if err != nil {
		return Result{}, err
	}
	first, err := r.Reload(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("first load: %v\n%s", err, reg.Status().Error)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	before := reg.Status().At
	go func() { done <- reload.Watch(ctx, r, reload.WatchOptions{Debounce: Debounce}) }()
	defer func() { cancel(); <-done }()
	// The watch reloads once, a quiet period after it starts: then it is in place.
	if err := waitFor(10*time.Second, func() bool { return reg.Status().At.After(before) }); err != nil {
		return Result{}, fmt.Errorf("the watch did not start: %w", err)
	}

	lat := make([]time.Duration, 0, edits)
	for i := range edits {
		prev := reg.Current().ID
		start := time.Now()
		if err := os.WriteFile(hook(i%49), []byte(enrichHook(i%49, fmt.Sprintf("edit %d", i))), 0o644); err != nil {
			return Result{}, err
		}
		if err := waitFor(10*time.Second, func() bool { return reg.Current().ID != prev }); err != nil {
			return Result{}, fmt.Errorf("edit %d did not go live: %w (%+v)", i, err, reg.Status())
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return Result{
		Edits: edits, Hooks: len(first.Hooks), Modules: modules, Debounce: Debounce,
		P50: lat[len(lat)/2], P95: lat[len(lat)*95/100], Max: lat[len(lat)-1],
	}, nil
}

func waitFor(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", timeout)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// writeConfig writes 49 enrich hooks (one file each), the required plan hook, the plan
// and lib modules plus 18 generated ones, and an allow-list. It returns the path of
// enrich hook i and the module count.
func writeConfig(dir string, policies []fixture.File) (func(int) string, int, error) {
	hook := func(i int) string { return filepath.Join(dir, "hooks", fmt.Sprintf("h%02d.yaml", i)) }
	files := []fixture.File{
		{Name: "hooks/plan.yaml", Data: []byte(fixture.PlanHook)},
		{Name: "data/agentd/allowlist.json", Data: []byte(`{"allowlist": {"demo-tools": {"stock-service": ["stock_quote"]}}}`)},
	}
	for i := range 49 {
		files = append(files, fixture.File{Name: fmt.Sprintf("hooks/h%02d.yaml", i), Data: []byte(enrichHook(i, "initial"))})
	}
	modules := 0
	for _, f := range policies {
		if f.Name == "policies/agentd/plan/plan.rego" || f.Name == "policies/agentd/lib/lib.rego" {
			files = append(files, f)
			modules++
		}
	}
	if modules != 2 {
		return nil, 0, fmt.Errorf("policies lack plan.rego or lib.rego")
	}
	for i := range 18 {
		files = append(files, fixture.File{Name: fmt.Sprintf("policies/extra/m%02d.rego", i), Data: []byte(fmt.Sprintf(`package agentd.extra.m%02d

limit := %d

deny contains msg if {
	some step in input.plan.steps
	step.metadata.parameters.amount > limit * 1000
	msg := sprintf("step %%s is over %%d", [step.step_id, limit])
}
`, i, i+1))})
		modules++
	}
	return hook, modules, fixture.Write(dir, files)
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
