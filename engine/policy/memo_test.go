package policy

import (
	"hash/maphash"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// An entry answers its own key only: two keys with equal hashes share a slot, and the
// slot's key decides. The collision is made by moving an entry to another key's slot,
// as a 64-bit hash collision cannot be found in a test.
func TestPlanMemo_AnEntryAnswersOnlyItsOwnKey(t *testing.T) {
	q := mustPrepare(t, libraryBundle(t, Options{}), "data.agentd.plan")
	m := q.NewPlanMemo(64)
	step := func(ns string) *engine.RoutingPlan {
		return &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{{StepID: "s1", Namespace: ns,
			AgentName: "stock-service", Metadata: map[string]any{"capability": "stock_quote"}}}}
	}
	lookup := func(p *engine.RoutingPlan) (PlanDecision, string, bool) {
		t.Helper()
		d, key, hit, err := m.Lookup(p, 1, "r", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d, key, hit
	}
	allowed, denied := step("demo-tools"), step("elsewhere")
	_, allowedKey, hit := lookup(allowed)
	if hit {
		t.Fatal("a new memo answered")
	}
	_, deniedKey, _ := lookup(denied)
	m.Put(allowedKey, PlanDecision{})
	if d, _, hit := lookup(allowed); !hit || !d.Allowed() {
		t.Fatalf("Lookup(allowed) = %v, hit %v; want the stored decision", d, hit)
	}

	ha := maphash.String(keySeed, allowedKey)
	e := m.shard(ha).entries[ha]
	if e.key != allowedKey {
		t.Fatalf("the allowed key's slot holds %q", e.key)
	}
	h := maphash.String(keySeed, deniedKey)
	m.shard(h).entries[h] = e
	if d, key, hit := lookup(denied); hit || key != deniedKey {
		t.Errorf("Lookup(denied) in a slot holding another key = %v, hit %v, key %q; want a miss with its own key", d, hit, key)
	}
}
