package openai

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/internal/cputime"
	"github.com/agentd-dev/agentd/server"
)

// cannedUpstream answers every upstream call with body, in memory: no upstream server
// and no network, so that the process's CPU is the gateway's alone.
type cannedUpstream string

func (c cannedUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r,
		Header: http.Header{"Content-Type": {"application/json"}}, ContentLength: int64(len(c)), Body: io.NopCloser(strings.NewReader(string(c)))}, nil
}

// BenchmarkGateway_RoundCost is issue 40.3's pair: the CPU of a memo-hit tool round
// through the gateway (before_planning, after_planning answered by the decision memo,
// one tool_call check, the request decoded and vetted, the upstream body encoded, the
// reply parsed and vetted, the answer re-encoded) against the CPU of one after_planning
// stage call through the API's HTTP handler (a new request with the same plan, a memo
// hit too), on the same generation, driver and memory store, made in turn in one loop.
// Neither side touches a network: the handler is called directly, the upstream answers
// from memory. The process's CPU time (every thread: the collector's too) is charged to
// the side that ran; round/stage is the ratio (goal: ≤ 3).
func BenchmarkGateway_RoundCost(b *testing.B) {
	gen := exampleGeneration(b, "http://upstream.invalid/v1", "")
	registry := reload.NewRegistry(1)
	registry.Swap(gen)
	mem := store.NewMemory(store.MemoryOptions{})
	driver, err := engine.NewDriver(engine.DriverConfig{Generations: registry, States: mem, Records: mem, KeepPlans: true})
	if err != nil {
		b.Fatal(err)
	}
	g := New(Config{Registry: registry, Driver: driver})
	g.up.client.Transport = cannedUpstream(toolRound)
	svc, err := server.New(server.Config{Registry: registry, Driver: driver, Records: mem})
	if err != nil {
		b.Fatal(err)
	}
	api := svc.Handler(server.HTTPOptions{})
	plan := `{"plan_id":"p1","steps":[{"step_id":"call_1","agent_name":"stock-service","namespace":"demo-tools","instruction":"get_quote","metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME"}}}]}`
	sides := []struct {
		name string
		call func(i int) *httptest.ResponseRecorder
		want string
	}{
		{"stage", func(i int) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/v1/hooks/after_planning", strings.NewReader(`{"request_id":"r`+strconv.Itoa(i)+`","request":"quote ACME","plan":`+plan+`}`))
			r.Header.Set("Content-Type", "application/json")
			api.ServeHTTP(rec, r)
			return rec
		}, `"plan_id":"p1"`},
		{"round", func(i int) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(
				`{"model":"m","metadata":{"tenant":"acme"},"messages":[{"role":"user","content":"What is ACME trading at? `+strconv.Itoa(i)+`"}]}`))
			r.Header.Set("Content-Type", "application/json")
			g.ServeHTTP(rec, r)
			return rec
		}, `"tool_calls"`},
	}
	var cpu [2]time.Duration
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		for k := range sides {
			s := sides[(k+i)%2] // the first rotates
			before := cputime.Process(b)
			rec := s.call(i)
			cpu[(k+i)%2] += cputime.Process(b) - before
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), s.want) {
				b.Fatalf("%s: %d %s", s.name, rec.Code, rec.Body)
			}
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(i) }
	b.ReportMetric(per(cpu[0]), "stage-cpu-ns/op")
	b.ReportMetric(per(cpu[1]), "round-cpu-ns/op")
	b.ReportMetric(per(cpu[1])/per(cpu[0]), "round/stage")
}
