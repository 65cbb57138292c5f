package bolt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
)

// BenchmarkStore_StageWrites is the store's part of a stage call of a new request in
// each durability mode: a state write, then a record write, each waited for, as the
// driver does; cpu-ns/op is the process's CPU time per call, the background
// checkpoints' included. Run it with -cpu 1 and 2 and compare modes in the same run.
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
			before := cpuTime(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := writeStage(ctx, s, fmt.Sprint("req-", n.Add(1)), 1, at); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
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
		start := time.Now()
		if err := writeStage(ctx, s, fmt.Sprint("req-", i), 1, at); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*999/1000]), "p99.9-ns")
	b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
}

// BenchmarkStore_RequestLife is the store's part of a request's life in the default
// mode: its state and record written at its first stage call and rewritten at each of
// seven more (checks, finishes, stages), each pair in one commit under Defer, as the
// driver writes them. Most of what the journal holds is then replaced before its
// checkpoint; cpu-ns/op is the process's CPU time per request, the background
// checkpoints' included.
func BenchmarkStore_RequestLife(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	at := time.Now()
	var n atomic.Int64
	before := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprint("req-", n.Add(1))
			for rev := int64(1); rev <= 8; rev++ {
				ctx, flush := s.Defer(context.Background())
				if err := errors.Join(writeStage(ctx, s, id, rev, at), flush()); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}

// writeStage makes the store's writes of a stage call: the state of request id at
// revision rev, then its record (with a response of 1,200 bytes).
func writeStage(ctx context.Context, s *Store, id string, rev int64, at time.Time) error {
	if err := s.PutRequest(ctx, &engine.RequestState{ID: id, Request: "quote ACME", Revision: rev}, time.Hour); err != nil {
		return err
	}
	rec := record(id, rev, engine.RecordRunning, at)
	rec.FinalResponse = strings.Repeat("x", 1200)
	return s.Put(ctx, rec)
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
