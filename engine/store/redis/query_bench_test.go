package redis_test

import (
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/engine/store/storetest"
)

// The first page of a list of 10,000 records: all of them, and the failed tenth.
func BenchmarkRecords_ListFirstPage(b *testing.B) {
	s, _, _ := index(b)
	r := s.Records(store.Retention{})
	if err := storetest.Fill(r, 10_000); err != nil {
		b.Fatal(err)
	}
	b.Run("all", func(b *testing.B) { storetest.BenchmarkList(b, r, store.Query{}) })
	b.Run("failed", func(b *testing.B) { storetest.BenchmarkList(b, r, store.Query{Status: engine.RecordFailed}) })
	b.Run("violation", func(b *testing.B) {
		storetest.BenchmarkList(b, r, store.Query{Violation: "capability_not_allowed", Stage: engine.StageAfterPlanning})
	})
}
