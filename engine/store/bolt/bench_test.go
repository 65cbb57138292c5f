package bolt

import (
	"context"
	"fmt"
	"slices"
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

// BenchmarkStore_StageWritesTail is the latency of a stage call's writes one call at a
// time in the default mode, with its tail: the journal is retired and checkpointed every
// 4 MiB, which no call should wait for. Run it with -benchtime 20000x (about 8
// checkpoints) and read p99.9-ns and max-ns.
func BenchmarkStore_StageWritesTail(b *testing.B) {
	ctx := context.Background()
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	at := time.Now()
	lat := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprint("req-", i)
		start := time.Now()
		st := &engine.RequestState{ID: id, Request: "quote ACME", Revision: 1}
		if err := s.PutRequest(ctx, st, time.Hour); err != nil {
			b.Fatal(err)
		}
		rec := record(id, st.Revision, engine.RecordRunning, at)
		rec.FinalResponse = strings.Repeat("x", 1200)
		if err := s.Put(ctx, rec); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*999/1000]), "p99.9-ns")
	b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
}
