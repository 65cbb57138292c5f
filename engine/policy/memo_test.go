package policy

import (
	"hash/maphash"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// An entry answers its own key only: two keys with equal hashes share a slot, and the
// slot's key decides; and keys of one kind (exact, allowed) never answer the other's
// lookup, even when their bytes are equal. The collisions are made by moving an entry to
// another key's slot, as a 64-bit hash collision cannot be found in a test.
func TestPlanMemo_AnEntryAnswersOnlyItsOwnKey(t *testing.T) {
	q := mustPrepare(t, libraryBundle(t, Options{}), "data.agentd.plan")
	m := q.NewPlanMemo(64)
	if m.AllowedReads() == nil {
		t.Fatal("the stock allow-list's memo keys allowed decisions by its exact reads")
	}
	step := func(ns string) *engine.RoutingPlan {
		return &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{{StepID: "s1", Namespace: ns,
			AgentName: "stock-service", Metadata: map[string]any{"capability": "stock_quote"}}}}
	}
	lookup := func(p *engine.RoutingPlan) (PlanDecision, MemoKey, bool) {
		t.Helper()
		d, key, hit, err := m.Lookup(p, 1, "r", nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d, key, hit
	}
	allowed, denied := step("demo-tools"), step("elsewhere")
	_, allowedKeys, hit := lookup(allowed)
	if hit {
		t.Fatal("a new memo answered")
	}
	_, deniedKeys, _ := lookup(denied)
	m.Put(allowedKeys, PlanDecision{})
	if d, _, hit := lookup(allowed); !hit || !d.Allowed() {
		t.Fatalf("Lookup(allowed) = %v, hit %v; want the stored decision", d, hit)
	}

	ha := maphash.String(keySeed, allowedKeys.Allowed)
	e := m.shard(ha).entries[allowedKey][ha]
	if e.key != allowedKeys.Allowed {
		t.Fatalf("the allowed key's slot holds %q", e.key)
	}
	for kind, key := range map[keyKind]string{allowedKey: deniedKeys.Allowed, exactKey: deniedKeys.Exact} {
		h := maphash.String(keySeed, key)
		m.shard(h).entries[kind][h] = e
	}
	if d, key, hit := lookup(denied); hit || key != deniedKeys {
		t.Errorf("Lookup(denied) in slots holding another key = %v, hit %v, keys %q; want a miss with its own keys", d, hit, key)
	}
	h := maphash.String(keySeed, deniedKeys.Allowed)
	m.shard(h).entries[exactKey][h] = memoEntry{deniedKeys.Allowed, PlanDecision{}}
	if d, _, hit := lookup(denied); hit {
		t.Errorf("an exact entry keyed by the bytes of an allowed key answered: %v", d)
	}
}
