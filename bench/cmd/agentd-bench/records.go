package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/procs"
	"github.com/agentd-dev/agentd/bench/internal/report"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/engine/store/storetest"
)

// Records list settings: how many records the store holds, and how many times each
// first page is read (after a tenth as many unmeasured reads).
const (
	listRecords = 10_000
	listReads   = 200
	listGoal    = 200 * time.Millisecond
)

// records measures the first page of the records list, what the viewer opens with,
// over 10,000 records: through HTTP against agentd serving examples/stock-agent on its
// memory store (filled by stage calls: a tenth of the requests are trades the plan
// policy rejects), and in process on store.Memory.
func (b *bench) records() error {
	dir := filepath.Join(b.repo, "examples", "stock-agent")
	addr, err := procs.FreeAddr()
	if err != nil {
		return err
	}
	srv, err := procs.Start(b.agentdSpec("records-agentd", b.agentd, dir, addr), startTimeout)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			log.Print(err)
		}
	}()
	base := "http://" + addr
	began := time.Now()
	if err := fillRecords(b.ctx, base, listRecords); err != nil {
		return err
	}
	log.Printf("records: %d requests recorded in %v", listRecords, time.Since(began).Round(time.Millisecond))
	for _, c := range []struct{ id, figure, query string }{
		{"8a", "Records list: first page (50) of 10,000 records, GET /v1/executions", ""},
		{"8b", "Records list: first page of the failed tenth, ?status=failed", "?status=failed"},
		{"8c", "Records list: first page by violation and stage, ?violation=capability_not_allowed&stage=after_planning",
			"?violation=capability_not_allowed&stage=after_planning"},
	} {
		lat, err := readPages(b.ctx, base+"/v1/executions"+c.query)
		if err != nil {
			return fmt.Errorf("%s: %w", c.id, err)
		}
		p50, p99 := lat[len(lat)/2], lat[(len(lat)*99+99)/100-1]
		b.rows["8"] = append(b.rows["8"], report.Row{ID: c.id, Figure: c.figure,
			Agentd: fmt.Sprintf("p50 %s, p99 %s", report.Duration(p50), report.Duration(p99)), Peer: "—", Ratio: "—", Goal: "< 200 ms"})
		b.goals = append(b.goals, fmt.Sprintf("Row %s (%s): p99 %s, %s the goal of %s.", c.id, c.figure, report.Duration(p99),
			map[bool]string{true: "meets", false: "misses"}[p99 < listGoal], report.Duration(listGoal)))
	}
	mem := store.NewMemory(store.MemoryOptions{})
	if err := storetest.Fill(mem, listRecords); err != nil {
		return err
	}
	res := testing.Benchmark(func(tb *testing.B) { storetest.BenchmarkList(tb, mem, store.Query{Status: engine.RecordFailed}) })
	b.rows["8"] = append(b.rows["8"], report.Row{ID: "8d", Figure: "Records list in process: store.Memory.List, first page of the failed tenth of 10,000",
		Agentd: fmt.Sprintf("%s/op, %d allocs/op", report.NS(float64(res.NsPerOp())), res.AllocsPerOp()), Peer: "—", Ratio: "—", Goal: "< 200 ms"})
	b.notes = append(b.notes, fmt.Sprintf("Rows 8a–8c: %s records written by stage calls, then each first page read %d times in a row "+
		"(after %d unmeasured reads) by one client; the Redis store's list is measured by `go test -bench ListFirstPage ./engine/store/redis/` "+
		"(needs AGENTD_TEST_REDIS).", report.Count(listRecords), listReads, listReads/10))
	return nil
}

// fillRecords records n requests on the daemon at base: before_planning calls of the
// stock example's quote, and, for every tenth, the after_planning call of a trade the
// plan policy rejects (answered 403).
func fillRecords(ctx context.Context, base string, n int) error {
	client := &http.Client{Timeout: 30 * time.Second}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				path, body, want := "/v1/hooks/before_planning",
					fmt.Sprintf(`{"request_id":"quote-%06d","request":"What is ACME trading at? (%d)","metadata":{"tenant":"acme"}}`, i, i), http.StatusOK
				if i%10 == 0 {
					path, body, want = "/v1/hooks/after_planning", fmt.Sprintf(`{"request_id":"trade-%06d","request":"Buy 100 ACME","plan":`+
						`{"plan_id":"p","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"buy",`+
						`"metadata":{"capability":"execute_trade","parameters":{"symbol":"ACME","amount":100}}}]}}`, i), http.StatusForbidden
				}
				if err := post(ctx, client, base+path, body, want); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func post(ctx context.Context, client *http.Client, url, body string, want int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("POST %s: %d, want %d: %.300s", url, resp.StatusCode, want, data)
	}
	return nil
}

// readPages reads url listReads/10 times unmeasured, then listReads times, and
// returns the latencies sorted.
func readPages(ctx context.Context, url string) ([]time.Duration, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	lat := make([]time.Duration, 0, listReads)
	for i := range listReads + listReads/10 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(data, []byte(`"request_id"`)) {
			return nil, fmt.Errorf("GET %s: %d %v: %.300s", url, resp.StatusCode, err, data)
		}
		if i >= listReads/10 {
			lat = append(lat, took)
		}
	}
	slices.Sort(lat)
	return lat, nil
}
