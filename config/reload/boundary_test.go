package reload_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
)

// catalogOnly is the stock plan file as its first write leaves it: the catalog saved,
// the required hook and the guards not yet.
const catalogOnly = `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: stock-agent-plan}
catalog:
  - namespace: demo-tools
    agent: stock-service
    capabilities:
      - {name: stock_quote, returns: [price, currency]}
      - {name: execute_trade, returns: [order_id]}
`

// A config rewritten in two writes is valid YAML after the first, with no required
// hook and no guards: that generation never goes live, the last good one keeps
// serving, and the second write (or a config that states the removal) goes live.
func TestHardening_TwoWriteReloadKeepsTheBoundary(t *testing.T) {
	dir := stockAgent(t, "")
	r, reg := newReloader(t, dir)
	good := reg.Current()
	planFile := filepath.Join(dir, "hooks", "20-plan.yaml")
	full, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(planFile, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write(catalogOnly)
	_, err = r.Reload(t.Context())
	var be *reload.BoundaryError
	if !errors.As(err, &be) || len(be.Losses) != 2 {
		t.Fatalf("half-written reload: err = %v, want a BoundaryError for the required hook and the guard", err)
	}
	st := reg.Status()
	if reg.Current() != good || st.Result != "error" || !strings.Contains(st.Error, "allowed-operations") || !strings.Contains(st.Error, "guard rule") {
		t.Fatalf("after the refused reload: live %s, status %+v", reg.Current().ID, st)
	}

	write(string(full))
	if gen, err := r.Reload(t.Context()); err != nil || gen.ID != good.ID {
		t.Fatalf("second write: %v", err)
	}

	write(catalogOnly + "settings: {allow_boundary_removal: true}\n")
	if _, err := r.Reload(t.Context()); err != nil {
		t.Fatalf("a removal the config states was refused: %v", err)
	}
	if _, required := reg.Current().Pipeline.RequiredHook(); required {
		t.Fatal("the stated removal did not go live")
	}
}

// With RequirePlanReview no generation without a required hook goes live, the first
// one included.
func TestHardening_RequirePlanReviewRefusesAnyGenerationWithoutOne(t *testing.T) {
	dir := stockAgent(t, "")
	if err := os.WriteFile(filepath.Join(dir, "hooks", "20-plan.yaml"), []byte(catalogOnly+"settings: {allow_boundary_removal: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := reload.NewRegistry(2)
	r, err := reload.NewReloader(dir, config.Options{}, reg, nil, nil, reload.RequirePlanReview())
	if err != nil {
		t.Fatal(err)
	}
	var be *reload.BoundaryError
	if _, err := r.Reload(t.Context()); !errors.As(err, &be) || reg.Current() != nil || !strings.Contains(err.Error(), "--allow-no-plan-review") {
		t.Fatalf("first reload without a required hook: err = %v, live %v; want a boundary error naming --allow-no-plan-review", err, reg.Current())
	}
	plan, err := os.ReadFile(filepath.Join("..", "..", "examples", "stock-agent", "hooks", "20-plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hooks", "20-plan.yaml"), plan, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reload(t.Context()); err != nil || reg.Current() == nil {
		t.Fatalf("the required hook back: err = %v", err)
	}
	live := reg.Current()
	if err := os.WriteFile(filepath.Join(dir, "hooks", "20-plan.yaml"), []byte(catalogOnly+"settings: {allow_boundary_removal: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reload(t.Context()); !errors.As(err, &be) || be.Fix == "" || reg.Current() != live {
		t.Fatalf("a reload that drops the required hook, allow_boundary_removal or not: err = %v; want refused with the flag as the fix", err)
	}
}
