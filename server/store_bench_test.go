package server

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/engine/store/bolt"
)

// BenchmarkHandler_StageCallStoreCost is the CPU of one after_planning call of a new
// request (a state and a record written) on the stock-agent example through the whole
// HTTP handler, on the memory store, on the bolt store in its default durability mode
// (interval: commits fsynced every second in the background) and on the bolt store
// fsyncing every commit before its calls are answered (always), in the same run:
// rounds of the same calls go round the three, each round `clients` calls at once,
// and the process's CPU time (user and system, every thread: the committer's, the
// background fsync's and the collector's too) is charged to the store the round ran
// on. bolt/memory and bolt-always/memory are the ratios of their CPU per call.
func BenchmarkHandler_StageCallStoreCost(b *testing.B) {
	gen, err := config.Load("../examples/stock-agent", config.Options{})
	if err != nil {
		b.Fatal(err)
	}
	registry := reload.NewRegistry(1)
	registry.Swap(gen)
	handler := func(states engine.StateStore, records store.QueryableRecords) http.Handler {
		b.Helper()
		svc, err := newService(hostConfig{Registry: registry, States: states, Records: records})
		if err != nil {
			b.Fatal(err)
		}
		return svc.Handler(HTTPOptions{})
	}
	openBolt := func(sync bolt.Sync) *bolt.Store {
		bs, err := bolt.Open(b.TempDir(), bolt.Options{Sync: sync})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = bs.Close() })
		return bs
	}
	mem := store.NewMemory(store.MemoryOptions{})
	bs, always := openBolt(""), openBolt(bolt.SyncAlways)
	sides := []struct {
		name string
		h    http.Handler
	}{{"memory", handler(mem, mem)}, {"bolt", handler(bs, bs)}, {"bolt-always", handler(always, always)}}
	plan := `{"plan_id":"p1","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote","metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME"}}}]}`
	for _, clients := range []int{1, 32} {
		b.Run("clients="+strconv.Itoa(clients), func(b *testing.B) {
			var cpu, wall [3]time.Duration
			var calls int
			round := 0
			for b.Loop() {
				round++
				for i, side := range sides {
					before, start := cpuTime(b), time.Now()
					var wg sync.WaitGroup
					for c := range clients {
						wg.Add(1)
						go func() {
							defer wg.Done()
							body := `{"request_id":"r` + strconv.Itoa(round) + "-" + strconv.Itoa(c) + `","request":"quote ACME","plan":` + plan + `}`
							rec := httptest.NewRecorder()
							side.h.ServeHTTP(rec, newRequest(http.MethodPost, "/v1/hooks/after_planning", strings.NewReader(body)))
							if rec.Code != http.StatusOK {
								b.Errorf("%s: %d %s", side.name, rec.Code, rec.Body)
							}
						}()
					}
					wg.Wait()
					wall[i] += time.Since(start)
					cpu[i] += cpuTime(b) - before
				}
				calls += clients
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(calls) }
			for i, side := range sides {
				b.ReportMetric(per(cpu[i]), side.name+"-cpu-ns/call")
				b.ReportMetric(per(wall[i]), side.name+"-wall-ns/call")
				if i > 0 {
					b.ReportMetric(per(cpu[i])/per(cpu[0]), side.name+"/memory")
				}
			}
		})
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
