package store_test

import (
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/engine/store/storetest"
)

func newMemory(*testing.T) *store.Memory { return store.NewMemory(store.MemoryOptions{}) }

func TestMemory_States(t *testing.T) {
	storetest.States(t, func(t *testing.T) engine.StateStore { return newMemory(t) })
}

func TestMemory_Records(t *testing.T) {
	storetest.Records(t, func(t *testing.T) engine.RecordStore { return newMemory(t) })
}

func TestMemory_Cache(t *testing.T) {
	storetest.Cache(t, func(t *testing.T) store.Cache { return newMemory(t) })
}

func TestMemory_Limiter(t *testing.T) {
	storetest.Limiter(t, func(t *testing.T) store.Limiter { return newMemory(t) })
}

func TestMemory_Binding(t *testing.T) {
	storetest.Binding(t, func(t *testing.T) (storetest.Stores, storetest.Stores) {
		m := newMemory(t)
		return m, m
	})
}

func TestMemory_Query(t *testing.T) {
	storetest.Query(t, func(t *testing.T) store.QueryableRecords { return newMemory(t) })
}

func TestMemory_Approvals(t *testing.T) {
	storetest.Approvals(t, func(t *testing.T) (storetest.ApprovalStores, storetest.ApprovalStores) {
		m := newMemory(t)
		return m, m
	})
}
