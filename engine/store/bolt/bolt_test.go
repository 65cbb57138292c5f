package bolt_test

import (
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/engine/store/bolt"
	"github.com/agentd-dev/agentd/engine/store/storetest"
)

// open returns a store in a directory of t's, closed at cleanup.
func open(t testing.TB, opts bolt.Options) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func newStore(t *testing.T) *bolt.Store { return open(t, bolt.Options{}) }

func TestStore_States(t *testing.T) {
	storetest.States(t, func(t *testing.T) engine.StateStore { return newStore(t) })
}

func TestStore_Records(t *testing.T) {
	storetest.Records(t, func(t *testing.T) engine.RecordStore { return newStore(t) })
}

func TestStore_Cache(t *testing.T) {
	storetest.Cache(t, func(t *testing.T) store.Cache { return newStore(t) })
}

func TestStore_Limiter(t *testing.T) {
	storetest.Limiter(t, func(t *testing.T) store.Limiter { return newStore(t) })
}

func TestStore_Binding(t *testing.T) {
	storetest.Binding(t, func(t *testing.T) (storetest.Stores, storetest.Stores) {
		s := newStore(t)
		return s, s
	})
}

func TestStore_Query(t *testing.T) {
	storetest.Query(t, func(t *testing.T) store.QueryableRecords { return newStore(t) })
}

func TestStore_Approvals(t *testing.T) {
	storetest.Approvals(t, func(t *testing.T) (storetest.ApprovalStores, storetest.ApprovalStores) {
		s := newStore(t)
		return s, s
	})
}
