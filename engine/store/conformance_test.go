package store_test

import (
	"testing"

	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/engine/store/storetest"
)

func TestMemory_Conformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) storetest.Store { return store.NewMemory(0) })
}
