package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine/store/redis/redistest"
)

// replicaHooks adds to the stock-agent example a rate limit (quotaLimit calls per
// metadata.quota and hour) and an optional after_planning hook that stamps the
// request's rag_context enrichment on every step, so a test sees enrichments flow
// from before_planning to after_planning.
const (
	quotaLimit   = 5
	replicaHooks = `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: replica}
hooks:
  - name: tenant-quota
    stage: before_planning
    when: has(metadata.quota)
    steps:
      - rate_limit: {key: "string(metadata.quota)", limit: 5, window: 60m}
  - name: context-stamp
    stage: after_planning
    steps:
      - plan.set_metadata: {key: rag_context, value: "has(enrichments.rag_context) ? string(enrichments.rag_context) : 'none'"}
`
)

// replicaConfig is the stock-agent example plus replicaHooks, in a fresh directory.
func replicaConfig(t *testing.T) string {
	t.Helper()
	dir := copyExample(t, "stock-agent")
	writeFile(t, dir, "hooks/15-replica.yaml", replicaHooks)
	return dir
}

// sharedRedis is the shared test Redis under a key prefix of t's own, with budgets
// generous enough that a loaded machine never turns a cache or rate-limit operation
// into a fail-open: these tests are about sharing, the fault tests about budgets.
func sharedRedis(t *testing.T) string {
	t.Helper()
	return redistest.URL(t) + "&timeout=5s&cache_timeout=5s"
}

// startReplicas starts n daemons on config sharing the Redis at storeURL.
func startReplicas(t *testing.T, config, storeURL string, n int, flags ...string) []*daemon {
	t.Helper()
	replicas := make([]*daemon, n)
	for i := range replicas {
		replicas[i] = startDaemon(t, config, append([]string{"--store", storeURL}, flags...)...)
	}
	return replicas
}

var testClient = &http.Client{Timeout: 30 * time.Second}

// try sends a request and returns the status and body, or the transport error; unlike
// do it may run outside the test goroutine.
func (d *daemon) try(method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, d.url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// call posts body to a stage and decodes the JSON answer; it fails the test on a
// transport error.
func (d *daemon) call(t *testing.T, path, body string) (int, map[string]any) {
	t.Helper()
	status, data, err := d.try(http.MethodPost, path, body)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("POST %s answered %d with non-JSON %q", path, status, data)
	}
	return status, out
}

// record fetches the execution record of id.
func (d *daemon) record(t *testing.T, id string) (int, *recordBody) {
	t.Helper()
	status, data, err := d.try(http.MethodGet, "/v1/executions/"+id, "")
	if err != nil {
		t.Fatalf("GET record %s: %v", id, err)
	}
	var rec recordBody
	if status == http.StatusOK {
		if err := json.Unmarshal(data, &rec); err != nil {
			t.Fatalf("record %s: %v in %s", id, err, data)
		}
	}
	return status, &rec
}

// recordBody is the part of an execution record the tests read.
type recordBody struct {
	Status        string `json:"status"`
	Revision      int    `json:"revision"`
	FinalResponse string `json:"final_response"`
	PipelineHooks []struct {
		HookName string `json:"hook_name"`
		Phase    string `json:"phase"`
		Status   string `json:"status"`
		Decision struct {
			Reason string `json:"reason"`
		} `json:"decision"`
	} `json:"pipeline_hooks"`
	Phases []map[string]any `json:"phases"`
}

func (r *recordBody) hooks() []string {
	var names []string
	for _, h := range r.PipelineHooks {
		names = append(names, h.HookName)
	}
	return names
}

func TestReplicas_StagesSplitAcrossReplicas(t *testing.T) {
	reps := startReplicas(t, replicaConfig(t), sharedRedis(t), 2)
	a, b := reps[0], reps[1]
	status, bp := a.call(t, "/v1/hooks/before_planning", `{"request_id":"split","request":"quote ACME","metadata":{"tenant":"acme"}}`)
	if status != 200 {
		t.Fatalf("before_planning on A = %d %v", status, bp)
	}
	status, ap := b.call(t, "/v1/hooks/after_planning", `{"request_id":"split","plan":`+quotePlan+`}`)
	if status != 200 {
		t.Fatalf("after_planning on B = %d %v", status, ap)
	}
	steps := ap["plan"].(map[string]any)["steps"].([]any)
	if got := steps[0].(map[string]any)["metadata"].(map[string]any)["rag_context"]; got != "Tenant: acme" {
		t.Fatalf("B's after_planning saw rag_context %v, want the enrichment A made (Tenant: acme)", got)
	}
	if status, body := b.call(t, "/v1/hooks/after_execution", `{"request_id":"split","result":{"plan_id":"p1","success":true,"steps":[{"step_id":"step-1","success":true,"response":"42"}]}}`); status != 200 {
		t.Fatalf("after_execution on B = %d %v", status, body)
	}
	if status, body := a.call(t, "/v1/hooks/after_synthesis", `{"request_id":"split","response":"ACME trades at 42"}`); status != 200 {
		t.Fatalf("after_synthesis on A = %d %v", status, body)
	}
	for name, d := range map[string]*daemon{"A": a, "B": b} {
		status, rec := d.record(t, "split")
		hooks := strings.Join(rec.hooks(), ",")
		if status != 200 || rec.Status != "succeeded" || rec.Revision != 4 || len(rec.Phases) != 1 || rec.FinalResponse != "ACME trades at 42" {
			t.Fatalf("record on %s = %d %+v", name, status, rec)
		}
		for _, h := range []string{"tenant-context", "context-stamp", "allowed-operations", "execution-audit", "pii-redaction"} {
			if !strings.Contains(hooks, h) {
				t.Fatalf("record on %s lacks the invocation of %s: %s", name, h, hooks)
			}
		}
		// The record, written four times through two replicas, is listed once by each.
		status, data, err := d.try(http.MethodGet, "/v1/executions?status=succeeded&stage=after_synthesis", "")
		if err != nil || status != 200 || strings.Count(string(data), `"request_id":"split"`) != 1 {
			t.Fatalf("the list on %s = %d %v: %s", name, status, err, data)
		}
	}
}

// A plan accepted through one replica binds the tool calls checked through the other,
// and a step claimed through one cannot run again through the other.
func TestReplicas_PlanAcceptedThroughOneBindsChecksThroughTheOther(t *testing.T) {
	reps := startReplicas(t, replicaConfig(t), sharedRedis(t), 2)
	a, b := reps[0], reps[1]
	if status, body := a.call(t, "/v1/hooks/after_planning", `{"request_id":"bound","request":"quote ACME","plan":`+quotePlan+`}`); status != 200 {
		t.Fatalf("after_planning on A = %d %v", status, body)
	}
	check := func(d *daemon, capability, step string) (int, string) {
		status, body := d.call(t, "/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"bound","step_id":"`+step+
			`","namespace":"demo-tools","agent_name":"stock-service","capability":"`+capability+`","parameters":{"symbol":"ACME"}}}`)
		den, _ := body["denial"].(map[string]any)
		code, _ := den["code"].(string)
		return status, code
	}
	for _, tc := range []struct {
		replica          *daemon
		capability, step string
		status           int
		code             string
	}{
		{b, "execute_trade", "step-1", 403, "plan_mismatch"},
		{b, "stock_quote", "step-2", 403, "not_in_accepted_plan"},
		{b, "stock_quote", "step-1", 200, ""},
		{a, "stock_quote", "step-1", 403, "step_already_executed"},
	} {
		if status, code := check(tc.replica, tc.capability, tc.step); status != tc.status || code != tc.code {
			t.Fatalf("check %s %s = %d %q, want %d %q", tc.capability, tc.step, status, code, tc.status, tc.code)
		}
	}
}

func TestReplicas_ResponseCachedThroughOneIsServedByTheOther(t *testing.T) {
	reps := startReplicas(t, replicaConfig(t), sharedRedis(t), 2)
	a, b := reps[0], reps[1]
	a.call(t, "/v1/hooks/before_planning", `{"request_id":"c1","request":"What is ACME?","metadata":{"tenant":"t1"}}`)
	a.call(t, "/v1/hooks/after_planning", `{"request_id":"c1","plan":`+quotePlan+`}`)
	if status, body := a.call(t, "/v1/hooks/after_synthesis", `{"request_id":"c1","response":"ACME is at 42"}`); status != 200 {
		t.Fatalf("after_synthesis on A = %d %v", status, body)
	}
	status, bp := b.call(t, "/v1/hooks/before_planning", `{"request_id":"c2","request":"  what is acme?","metadata":{"tenant":"t1"}}`)
	sc, _ := bp["short_circuit"].(map[string]any)
	if status != 200 || sc == nil || sc["response"] != "ACME is at 42" || sc["kind"] != "cache" {
		t.Fatalf("before_planning on B = %d %v, want the answer cached through A", status, bp)
	}
	if _, other := b.call(t, "/v1/hooks/before_planning", `{"request_id":"c3","request":"What is ACME?","metadata":{"tenant":"t2"}}`); other["short_circuit"] != nil {
		t.Fatalf("another tenant got t1's cached answer: %v", other)
	}
}

func TestReplicas_RateLimitHoldsAcrossReplicas(t *testing.T) {
	reps := startReplicas(t, replicaConfig(t), sharedRedis(t), 2)
	limited := func(d *daemon, quota string, i int) (bool, error) {
		status, data, err := d.try(http.MethodPost, "/v1/hooks/before_planning",
			fmt.Sprintf(`{"request_id":"%s-%d","request":"question %d","metadata":{"quota":%q}}`, quota, i, i, quota))
		if err != nil || status != 200 {
			return false, fmt.Errorf("before_planning = %d %s %v", status, data, err)
		}
		var out struct {
			ShortCircuit *struct{ Source string } `json:"short_circuit"`
		}
		if err := json.Unmarshal(data, &out); err != nil {
			return false, err
		}
		return out.ShortCircuit != nil && out.ShortCircuit.Source == "rate_limit", nil
	}
	t.Run("alternating", func(t *testing.T) {
		allowed := 0
		for i := range 3 * quotaLimit {
			lim, err := limited(reps[i%2], "alt", i)
			if err != nil {
				t.Fatal(err)
			}
			if !lim {
				allowed++
			}
		}
		if allowed != quotaLimit {
			t.Fatalf("alternating replicas allowed %d of %d, limit %d", allowed, 3*quotaLimit, quotaLimit)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		var allowed atomic.Int32
		var wg sync.WaitGroup
		for i := range 6 * quotaLimit {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lim, err := limited(reps[i%2], "burst", i)
				if err != nil {
					t.Error(err)
				} else if !lim {
					allowed.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := allowed.Load(); n != quotaLimit {
			t.Fatalf("concurrent calls on both replicas allowed %d of %d, limit %d", n, 6*quotaLimit, quotaLimit)
		}
	})
}

// acks counts, per request, the stage calls a replica acknowledged with a 200.
type acks struct {
	mu  sync.Mutex
	got map[string]*ack
}

type ack struct {
	stages      int
	planned     bool
	synthesized bool
}

func (a *acks) add(id, stage string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.got == nil {
		a.got = map[string]*ack{}
	}
	s := a.got[id]
	if s == nil {
		s = &ack{}
		a.got[id] = s
	}
	s.stages++
	s.planned = s.planned || stage == "after_planning"
	s.synthesized = s.synthesized || stage == "after_synthesis"
}

// lifecycle is the four stage calls of one request.
func lifecycle(id string) [][2]string {
	return [][2]string{
		{"before_planning", `{"request_id":"` + id + `","request":"quote ACME ` + id + `","metadata":{"tenant":"soak"}}`},
		{"after_planning", `{"request_id":"` + id + `","plan":` + quotePlan + `}`},
		{"after_execution", `{"request_id":"` + id + `","result":{"plan_id":"p1","success":true,"steps":[{"step_id":"step-1","success":true,"response":"42"}]}}`},
		{"after_synthesis", `{"request_id":"` + id + `","response":"ACME is at 42 (` + id + `)"}`},
	}
}

// verify checks that every acknowledged write is in the record other serves.
func (a *acks) verify(t *testing.T, other *daemon) (checked, lost int) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, s := range a.got {
		checked++
		var status int
		var rec *recordBody
		for range 50 { // the store may be coming back from a restart
			if status, rec = other.record(t, id); status != http.StatusServiceUnavailable {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		switch {
		case status != 200:
			t.Errorf("request %s: %d acknowledged stage calls, record answers %d", id, s.stages, status)
		case rec.Revision < s.stages:
			t.Errorf("request %s: %d acknowledged stage calls, record revision %d", id, s.stages, rec.Revision)
		case s.planned && len(rec.Phases) == 0:
			t.Errorf("request %s: acknowledged plan missing from the record", id)
		case s.synthesized && (rec.Status != "succeeded" || rec.FinalResponse == ""):
			t.Errorf("request %s: acknowledged synthesis, record status %s response %q", id, rec.Status, rec.FinalResponse)
		default:
			continue
		}
		lost++
	}
	return checked, lost
}

func TestReplicas_SIGKILLLosesNoAcknowledgedRecord(t *testing.T) {
	reps := startReplicas(t, replicaConfig(t), sharedRedis(t), 2)
	victim, survivor := reps[0], reps[1]
	var acked acks
	var completed atomic.Int32
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				id := fmt.Sprintf("kill-%d-%d", w, i)
				for _, st := range lifecycle(id) {
					status, body, err := victim.try(http.MethodPost, "/v1/hooks/"+st[0], st[1])
					if err != nil {
						return // the victim is gone
					}
					if status != 200 {
						t.Errorf("%s %s = %d %s", st[0], id, status, body)
						return
					}
					acked.add(id, st[0])
				}
				completed.Add(1)
			}
		}()
	}
	for completed.Load() < 60 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	<-victim.exited
	checked, lost := acked.verify(t, survivor)
	t.Logf("SIGKILL under load: %d requests acknowledged (%d complete lifecycles), %d lost", checked, completed.Load(), lost)
	if checked == 0 {
		t.Fatal("no acknowledged request to check")
	}
}
