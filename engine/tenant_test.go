package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// TestHardening_TenantConfinement: a call confined to a tenant opens only requests of
// that tenant and touches no request of another tenant or of none (stage calls,
// checks, finishes, and a record that outlived its request's state); unconfined calls
// are not affected, and records carry their request's tenant.
func TestHardening_TenantConfinement(t *testing.T) {
	ctx := context.Background()
	acme := engine.WithTenant(ctx, "tenant-acme")
	states, records := store.NewMemory(store.MemoryOptions{}), store.NewMemory(store.MemoryOptions{})
	runner, err := op.Compile(op.Set{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := engine.NewDriver(engine.DriverConfig{
		Generations: engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: mustNew(t, nil), Runner: runner}},
		States:      states, Records: records,
	})
	if err != nil {
		t.Fatal(err)
	}
	tenant := func(name string) map[string]any { return map[string]any{"tenant": name} }
	openOn := func(d *engine.Driver, ctx context.Context, id string, metadata map[string]any) error {
		s, err := d.Open(ctx, id, engine.Opening{Text: "q", Metadata: metadata})
		if err == nil {
			_, err = s.BeforePlanning(ctx)
		}
		return err
	}
	open := func(ctx context.Context, id string, metadata map[string]any) error {
		return openOn(d, ctx, id, metadata)
	}
	for id, tn := range map[string]string{"globex-1": "tenant-globex", "acme-1": "tenant-acme"} {
		if err := open(ctx, id, tenant(tn)); err != nil {
			t.Fatal(err)
		}
	}
	if err := open(ctx, "none-1", nil); err != nil {
		t.Fatal(err)
	}
	// A record whose request state is gone: another driver's records, fresh states.
	d2, err := engine.NewDriver(engine.DriverConfig{
		Generations: engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: mustNew(t, nil), Runner: runner}},
		States:      store.NewMemory(store.MemoryOptions{}), Records: records,
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(id string) op.Call { return op.Call{Operation: op.Turn, RequestID: id} }
	for _, tc := range []struct {
		name    string
		run     func() error
		refused bool
	}{
		{"open own tenant", func() error { return open(acme, "acme-2", tenant("tenant-acme")) }, false},
		{"open another tenant", func() error { return open(acme, "x-1", tenant("tenant-globex")) }, true},
		{"open without tenant", func() error { return open(acme, "x-2", nil) }, true},
		{"open with a non-string tenant", func() error { return open(acme, "x-3", map[string]any{"tenant": 7}) }, true},
		{"reopen another tenant's request", func() error { return open(acme, "globex-1", tenant("tenant-acme")) }, true},
		{"reopen a request of no tenant", func() error { return open(acme, "none-1", tenant("tenant-acme")) }, true},
		{"reopen own request", func() error { return open(acme, "acme-1", tenant("tenant-acme")) }, false},
		{"resume another tenant's request", func() error {
			_, err := d.Resume(acme, engine.StageAfterSynthesis, "globex-1", engine.Opening{})
			return err
		}, true},
		{"resume opens an unknown request without tenant", func() error {
			_, err := d.Resume(acme, engine.StageAfterExecution, "x-4", engine.Opening{})
			return err
		}, true},
		{"resume own request", func() error {
			_, err := d.Resume(acme, engine.StageAfterSynthesis, "acme-1", engine.Opening{})
			return err
		}, false},
		{"check on another tenant's request", func() error { _, err := d.Check(acme, call("globex-1")); return err }, true},
		{"check on an unknown request", func() error { _, err := d.Check(acme, call("x-5")); return err }, true},
		{"check on own request", func() error { _, err := d.Check(acme, call("acme-1")); return err }, false},
		{"finish on another tenant's request", func() error {
			return d.Finish(acme, engine.Finish{RequestID: "globex-1", StepID: "s", Status: engine.RunSucceeded})
		}, true},
		{"replace a record of another tenant that outlived its state", func() error { return openOn(d2, acme, "globex-1", tenant("tenant-acme")) }, true},
		{"a record of the own tenant that outlived its state", func() error { return openOn(d2, acme, "acme-1", tenant("tenant-acme")) }, false},
		{"unconfined calls open any tenant's request", func() error { return open(ctx, "globex-1", tenant("tenant-acme")) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			r, ok := engine.AsRefusal(err)
			refused := ok && r.Code == engine.RefusedTenantForbidden
			if refused != tc.refused {
				t.Fatalf("err = %v, want refused %v", err, tc.refused)
			}
			if refused && (strings.Contains(r.Error(), "tenant-")) {
				t.Fatalf("refusal %q names a tenant", r.Error())
			}
		})
	}
	for id, want := range map[string]string{"acme-1": "tenant-acme", "none-1": ""} {
		rec, err := records.Get(ctx, id)
		if err != nil || rec.Tenant != want {
			t.Fatalf("record %s tenant = %q (%v), want %q", id, rec.Tenant, err, want)
		}
	}
}
