package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// Fill puts n records like the stock walkthrough's into s, a tenth of them failed trades
// with a policy violation, written a millisecond apart, the newest now.
func Fill(s engine.RecordStore, n int) error {
	now := time.Now().UTC()
	recs := fixture(now)
	for i := range n {
		rec := *recs[0]
		if i%10 == 0 {
			rec = *recs[1]
		}
		rec.RequestID = fmt.Sprintf("%s-%06d", rec.RequestID, i)
		rec.UpdatedAt = now.Add(-time.Duration(i) * time.Millisecond)
		if err := s.Put(context.Background(), &rec); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkList measures the first page of q over the records s holds.
func BenchmarkList(b *testing.B, s store.RecordLister, q store.Query) {
	b.ReportAllocs()
	for b.Loop() {
		page, err := s.List(context.Background(), q)
		if err != nil || len(page.Records) == 0 {
			b.Fatalf("List = %d records, %v", len(page.Records), err)
		}
	}
}
