package bolt

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

// BenchmarkStore_StageWrites is the store's part of a stage call of a new request in
// each durability mode: a state write, then a record write, each waited for, as the
// driver does. Run it with -cpu 1 and 2 and compare modes in the same run.
func BenchmarkStore_StageWrites(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []Sync{SyncInterval, SyncNone, SyncAlways} {
		b.Run(string(mode), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{Sync: mode})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			at := time.Now()
			var n atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprint("req-", n.Add(1))
					st := &engine.RequestState{ID: id, Request: "quote ACME", Revision: 1}
					if err := s.PutRequest(ctx, st, time.Hour); err != nil {
						b.Fatal(err)
					}
					rec := record(id, st.Revision, engine.RecordRunning, at)
					rec.FinalResponse = strings.Repeat("x", 1200)
					if err := s.Put(ctx, rec); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
