package decisionlog

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/plugins/logs"

	"github.com/agentd-dev/agentd/engine"
)

// opaCollector answers 503 to its first failures requests, then decodes every batch
// as OPA's decision-log service would: a gzipped JSON array of logs.EventV1.
type opaCollector struct {
	mu       sync.Mutex
	failures int
	calls    int
	events   []logs.EventV1
	raw      []string
	errs     []error
}

func (c *opaCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls <= c.failures {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	fail := func(err error) {
		c.errs = append(c.errs, err)
		w.WriteHeader(http.StatusBadRequest)
	}
	if r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Content-Type") != "application/json" {
		fail(errors.New("not gzipped JSON: " + r.Header.Get("Content-Encoding") + " " + r.Header.Get("Content-Type")))
		return
	}
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		fail(err)
		return
	}
	var raw []json.RawMessage
	if err := json.NewDecoder(zr).Decode(&raw); err != nil {
		fail(err)
		return
	}
	for _, m := range raw {
		var e logs.EventV1
		if err := json.Unmarshal(m, &e); err != nil {
			fail(err)
			return
		}
		c.events = append(c.events, e)
		c.raw = append(c.raw, string(m))
	}
}

func (c *opaCollector) received() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

// The OPA sink's events decode as OPA's own EventV1: labels, bundle revision, path,
// masked input, result, metrics and the custom members, delivered after the
// collector's failures, masked as the other sinks mask.
func TestOPASink_EventsDecodeAsOPAEvents(t *testing.T) {
	gen, rules := loadRules(t, "decision_log: {mask: [metadata.email]}\n")
	collector := &opaCollector{failures: 1}
	srv := httptest.NewServer(collector)
	defer srv.Close()
	sink, err := NewOPASink(OPAOptions{
		HTTPOptions: HTTPOptions{URL: srv.URL, BatchSize: 2, Interval: 5 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond},
		Labels:      map[string]string{"id": "replica-1", "version": "v9.9.9", "region": "eu"},
	})
	if err != nil {
		t.Fatal(err)
	}
	mp, read := metrics(t)
	l, err := New(Options{Rules: rules, Sinks: []Sink{sink}, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stage, check := stageReport("r1", gen), checkReport("r1", gen)
	l.Staged(ctx, stage)
	l.Checked(ctx, check)
	l.Refused(engine.WithDecisionID(ctx, "d-refused"), engine.StageAfterExecution, "r2",
		&engine.RefusalError{Code: engine.RefusedGenerationRetired, RequestID: "r2", Generation: "g-old"})
	deadline := time.Now().Add(10 * time.Second)
	for collector.received() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	closeLogger(t, l)

	collector.mu.Lock()
	defer collector.mu.Unlock()
	if len(collector.errs) > 0 || len(collector.events) != 3 {
		t.Fatalf("collector decoded %d events, errors %v", len(collector.events), collector.errs)
	}
	for i, raw := range collector.raw {
		if strings.Contains(raw, "ann@example.com") {
			t.Errorf("event %d carries the masked address: %s", i, raw)
		}
	}
	st, ck, rf := collector.events[0], collector.events[1], collector.events[2]
	if st.Labels["id"] != "replica-1" || st.Labels["version"] != "v9.9.9" || st.Labels["region"] != "eu" {
		t.Errorf("labels = %v", st.Labels)
	}
	if st.DecisionID != stage.DecisionID || st.Path != "agentd/stage/after_planning" || st.Bundles[DefaultOPABundle].Revision != gen ||
		!st.Timestamp.Equal(stage.Started.UTC()) {
		t.Errorf("stage event = %+v", st)
	}
	if st.Metrics["timer_agentd_decision_ns"] != 1.5e6 {
		t.Errorf("metrics = %v, want timer_agentd_decision_ns 1.5e6", st.Metrics)
	}
	in, _ := deref(st.Input).(map[string]any)
	if in == nil || in["request"] != "quote ACME" || in["plan"] == nil || in["metadata"].(map[string]any)["tenant"] != "acme" {
		t.Errorf("stage input = %v", in)
	}
	if len(st.Erased) != 1 || st.Erased[0] != "metadata.email" {
		t.Errorf("erased = %v, want [metadata.email]", st.Erased)
	}
	res, _ := deref(st.Result).(map[string]any)
	if res == nil || res["outcome"] != "accepted" || res["accepted_plan"] == nil || len(res["hooks"].([]any)) != 1 {
		t.Errorf("stage result = %v", res)
	}
	if st.Custom["request_id"] != "r1" || st.Custom["kind"] != "stage" || st.Custom["policy_revision"] != "r1" || st.Custom["generation"] != gen {
		t.Errorf("stage custom = %v", st.Custom)
	}
	res, _ = deref(ck.Result).(map[string]any)
	den, _ := res["denial"].(map[string]any)
	if ck.Path != "agentd/check/tool_call" || res["outcome"] != "denied" || res["cause"] != string(engine.CauseGuardDenied) || den["code"] != "trade_limit" {
		t.Errorf("check event = %+v, result %v", ck, res)
	}
	if in, _ := deref(ck.Input).(map[string]any); in["call"] == nil || ck.Custom["step_id"] != "step-1" {
		t.Errorf("check input = %v, custom %v", in, ck.Custom)
	}
	if rf.DecisionID != "d-refused" || rf.Path != "agentd/refusal/after_execution" || rf.Bundles[DefaultOPABundle].Revision != "g-old" || rf.Input != nil {
		t.Errorf("refusal event = %+v", rf)
	}
	if collector.calls < 2 {
		t.Errorf("%d calls: the first batch was not sent again after the 503", collector.calls)
	}
	if n := read("agentd.decision_log.events", "sink=opa-http"); n != 3 {
		t.Errorf("opa-http events = %d, want 3", n)
	}
}

func deref(v *any) any {
	if v == nil {
		return nil
	}
	return *v
}

// NewOPASink refuses what cannot work, by what is wrong.
func TestNewOPASink_Refuses(t *testing.T) {
	ok := map[string]string{"id": "i", "version": "v"}
	for name, opts := range map[string]OPAOptions{
		"no url":     {Labels: ok},
		"ftp url":    {HTTPOptions: HTTPOptions{URL: "ftp://h/logs"}, Labels: ok},
		"no id":      {HTTPOptions: HTTPOptions{URL: "http://h/logs"}, Labels: map[string]string{"version": "v"}},
		"no version": {HTTPOptions: HTTPOptions{URL: "http://h/logs"}, Labels: map[string]string{"id": "i"}},
	} {
		if _, err := NewOPASink(opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewOPASink(OPAOptions{HTTPOptions: HTTPOptions{URL: "https://h/logs"}, Labels: ok}); err != nil {
		t.Errorf("a valid sink: %v", err)
	}
}

// A full buffer drops events under the sink's own label.
func TestOPASink_FullBufferCountsUnderItsLabel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer srv.Close()
	sink, err := NewOPASink(OPAOptions{HTTPOptions: HTTPOptions{URL: srv.URL, Buffer: 2, BatchSize: 1, Interval: time.Hour, MaxBackoff: time.Millisecond},
		Labels: map[string]string{"id": "i", "version": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	mp, read := metrics(t)
	in, _ := newInstruments(mp, nil)
	sink.bind(in)
	gen := "g1"
	for range 5 {
		r := stageReport("r1", gen)
		var e Event
		stageEvent(&e, r)
		sink.write(&e, nil)
	}
	if n := read("agentd.decision_log.dropped", "sink=opa-http", "reason=buffer_full"); n != 3 {
		t.Errorf("buffer_full = %d, want 3", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := sink.close(ctx); err == nil {
		t.Error("close reported no undelivered events")
	}
	if n := read("agentd.decision_log.dropped", "sink=opa-http", "reason=shutdown"); n != 2 {
		t.Errorf("shutdown = %d, want 2", n)
	}
}
