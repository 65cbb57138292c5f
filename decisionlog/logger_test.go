package decisionlog

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/internal/capture"
)

// With a mask on metadata.email, no sink ever sees the address: not the file, not the
// HTTP endpoint, not the log with payloads, whether the metadata came with a stage
// call or with a turn's call.
func TestLogger_MaskedAddressReachesNoSink(t *testing.T) {
	gen, rules := loadRules(t, "decision_log: {mask: [metadata.email]}\n")
	file, path := tempFileSink(t)
	endpoint := &capture.Bodies{}
	srv := httptest.NewServer(endpoint)
	defer srv.Close()
	post, err := NewHTTPSink(HTTPOptions{URL: srv.URL, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var logBuf capture.Buffer
	l, err := New(Options{Rules: rules, Sinks: []Sink{NewLogSink(&logBuf, nil, true), file, post}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l.Staged(ctx, stageReport("r1", gen))
	l.Checked(ctx, turnReport("r1", gen))
	held := checkReport("r1", gen)
	held.Record.Approval = &engine.ApprovalMark{ID: "apr_0123456789abcdef0123456789abcdef_1", Status: engine.ApprovalRejected, DecidedBy: "desk-lead", Comment: "too much"}
	l.Checked(ctx, held)
	closeLogger(t, l)

	for sink, text := range map[string]string{"log": logBuf.String(), "http": endpoint.All(), "file": readFile(t, path)} {
		if strings.Contains(text, "ann@example.com") {
			t.Errorf("the %s sink got the masked address:\n%s", sink, text)
		}
		if !strings.Contains(text, `"tenant":"acme"`) || !strings.Contains(text, "quote ACME") {
			t.Errorf("the %s sink lost what no mask names:\n%s", sink, text)
		}
	}
	events := readEvents(t, path)
	if len(events) != 3 {
		t.Fatalf("%d events, want 3", len(events))
	}
	if e := events[0]; len(e.Erased) != 1 || e.Erased[0] != "metadata.email" || e.Input["plan"] == nil || e.Output["accepted_plan"] == nil {
		t.Errorf("stage event = %+v, want its plan in, its accepted plan out and metadata.email erased", e)
	}
	if e := events[2]; e.Denial == nil || e.Denial.Code != "trade_limit" || e.Denial.Guard != "limit" || e.Cause != engine.CauseGuardDenied {
		t.Errorf("check event = %+v, want the guard's denial", e)
	}
	if a := events[2].Approval; a == nil || *a != *held.Record.Approval {
		t.Errorf("check event's approval = %+v, want who decided it and the comment %+v", a, held.Record.Approval)
	}
}

// Every report is one event, with the decision id it was reported with; refusals too.
func TestLogger_OneEventPerReport(t *testing.T) {
	gen, rules := loadRules(t, "decision_log: {drop: [{stage: after_execution}]}\n")
	file, path := tempFileSink(t)
	mp, read := metrics(t)
	l, err := New(Options{Rules: rules, Sinks: []Sink{file}, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := engine.WithDecisionID(context.Background(), "refused-decision")
	want := map[string]string{}
	for i := range 20 {
		s, c := stageReport("r", gen), checkReport("r", gen)
		l.Staged(ctx, s)
		l.Checked(ctx, c)
		want[s.DecisionID], want[c.DecisionID] = "stage", "check"
		if i == 0 {
			dropped := stageReport("r", gen)
			dropped.Stage, dropped.Outcome = engine.StageAfterExecution, engine.OutcomeCompleted
			l.Staged(ctx, dropped)
		}
	}
	l.Refused(ctx, engine.StageAfterPlanning, "r", &engine.RefusalError{Code: engine.RefusedGenerationRetired, Generation: "old"})
	want["refused-decision"] = "refusal"
	closeLogger(t, l)
	events := readEvents(t, path)
	if len(events) != len(want) {
		t.Fatalf("%d events, want %d", len(events), len(want))
	}
	for _, e := range events {
		if want[e.DecisionID] != e.Kind || e.SchemaVersion != SchemaVersion {
			t.Errorf("event %s of kind %s (schema %d): want one %s event per report", e.DecisionID, e.Kind, e.SchemaVersion, want[e.DecisionID])
		}
		delete(want, e.DecisionID)
	}
	if n := read("agentd.decision_log.dropped", "reason=drop_rule"); n != 1 {
		t.Errorf("drop_rule drops = %d, want 1", n)
	}
	if n := read("agentd.decision_log.events", "sink=file"); n != 41 {
		t.Errorf("file events = %d, want 41", n)
	}
}

// The payload of a call on a generation the logger cannot find is left out whole: its
// masks are unknown.
func TestLogger_UnknownGenerationShowsNoPayload(t *testing.T) {
	_, rules := loadRules(t, "decision_log: {mask: [metadata.email]}\n")
	file, path := tempFileSink(t)
	l, err := New(Options{Rules: rules, Sinks: []Sink{file}})
	if err != nil {
		t.Fatal(err)
	}
	l.Staged(context.Background(), stageReport("r", "g-retired"))
	closeLogger(t, l)
	e := readEvents(t, path)[0]
	if e.Input != nil || e.Output != nil || len(e.Erased) != 1 || e.Erased[0] != "*" {
		t.Fatalf("event = %+v, want no payload and erased [*]", e)
	}
}

// blockingSink blocks every write until released.
type blockingSink struct {
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	writes  int
}

func (s *blockingSink) name() string              { return "blocking" }
func (s *blockingSink) wants() wants              { return wants{} }
func (s *blockingSink) bind(*instruments)         {}
func (s *blockingSink) flush()                    {}
func (*blockingSink) close(context.Context) error { return nil }
func (s *blockingSink) write(*Event, []byte) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	s.mu.Lock()
	s.writes++
	s.mu.Unlock()
}

// A sink that never returns fills the queue; reports past it are dropped and counted,
// and reporting never waits.
func TestLogger_FullQueueDropsWithoutBlocking(t *testing.T) {
	gen, rules := loadRules(t, "")
	sink := &blockingSink{entered: make(chan struct{}, 1), release: make(chan struct{})}
	mp, read := metrics(t)
	l, err := New(Options{Rules: rules, Sinks: []Sink{sink}, Queue: 2, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	l.Staged(context.Background(), stageReport("r", gen))
	<-sink.entered // the worker holds the first event
	for range 9 {
		l.Staged(context.Background(), stageReport("r", gen))
	}
	if n := read("agentd.decision_log.dropped", "sink=logger", "reason=queue_full"); n != 7 {
		t.Errorf("queue_full drops = %d, want 7", n)
	}
	close(sink.release)
	closeLogger(t, l)
	if sink.writes != 3 {
		t.Errorf("the sink got %d events, want the 3 that fit", sink.writes)
	}
}

// What rules in warn or audit mode would have denied is in the event, with each hook's
// mode.
func TestLogger_CarriesFindings(t *testing.T) {
	gen, rules := loadRules(t, "")
	file, path := tempFileSink(t)
	l, err := New(Options{Rules: rules, Sinks: []Sink{file}})
	if err != nil {
		t.Fatal(err)
	}
	finding := engine.Finding{Mode: engine.RuleAudit, Rule: "rego data.rollout.freeze", Cause: engine.CausePolicyDenied,
		Violations: []engine.Violation{{Code: "acme_frozen", StepID: "step-1", Message: "frozen"}}}
	s := stageReport("r", gen)
	s.Invocations[0].Mode, s.Invocations[0].WouldDeny = engine.RuleAudit, []engine.Finding{finding}
	c := checkReport("r", gen)
	c.Record.WouldDeny = []engine.Finding{{Mode: engine.RuleWarn, Rule: "acme-quotes", Code: "acme_frozen", Reason: "frozen"}}
	l.Staged(context.Background(), s)
	l.Checked(context.Background(), c)
	closeLogger(t, l)
	events := readEvents(t, path)
	if e := events[0]; e.Hooks[0].Mode != engine.RuleAudit || len(e.WouldDeny) != 1 || e.WouldDeny[0].Violations[0].Code != "acme_frozen" {
		t.Errorf("stage event = %+v, want the audit hook's finding", e)
	}
	if e := events[1]; len(e.WouldDeny) != 1 || e.WouldDeny[0].Mode != engine.RuleWarn {
		t.Errorf("check event = %+v, want the warn guard's finding", e)
	}
}

// recordingSink keeps each event's line and encoding/json's encoding of the event as it
// was written.
type recordingSink struct{ lines, events []string }

func (s *recordingSink) name() string              { return "recording" }
func (s *recordingSink) wants() wants              { return wants{payload: true, line: true} }
func (s *recordingSink) bind(*instruments)         {}
func (s *recordingSink) flush()                    {}
func (*recordingSink) close(context.Context) error { return nil }
func (s *recordingSink) write(e *Event, line []byte) {
	data, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	s.lines, s.events = append(s.lines, string(line)), append(s.events, string(data))
}

// One worker writes a run of reports of every kind as many workers that wrote nothing
// before would, each its one report: the event and payload it reuses carry nothing
// from one report to the next, and hold nothing once it is written.
func TestLogger_ReusedEventCarriesNothingOver(t *testing.T) {
	gen, rules := loadRules(t, "decision_log:\n  mask: [metadata.email]\n")
	noHooks := stageReport("r1", gen)
	noHooks.Invocations, noHooks.Accepted = nil, nil
	findings := checkReport("r2", gen)
	findings.Record.WouldDeny = []engine.Finding{{Mode: engine.RuleAudit, Rule: "limit", Code: "big"}}
	run := []pending{
		{stage: stageReport("r1", gen)},
		{check: turnReport("r1", gen)},
		{check: findings},
		{refusal: newRefusal(context.Background(), engine.StageAfterPlanning, "r3", &engine.RefusalError{Code: engine.RefusedGenerationRetired, Generation: "old"})},
		{built: &Event{SchemaVersion: SchemaVersion, Kind: config.EventShadow, DecisionID: "d-shadow", Outcome: "accepted"}},
		{stage: noHooks},
		{check: checkReport("r4", "g-unknown")},
		{stage: stageReport("r5", gen)},
	}
	for i := range run {
		if run[i].stage != nil && run[i].stage.Generation == gen || run[i].check != nil && run[i].check.Generation == gen {
			run[i].rules, run[i].known = rules(gen)
		}
	}
	logger := func(sink Sink) *Logger {
		l, err := New(Options{Rules: rules, Sinks: []Sink{sink}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeLogger(t, l) })
		return l
	}
	reused := &recordingSink{}
	l := logger(reused)
	for i, p := range run {
		l.process(p)
		fresh := &recordingSink{}
		logger(fresh).process(p)
		if reused.lines[i] != fresh.lines[0] || reused.events[i] != fresh.events[0] {
			t.Errorf("report %d written after %d others:\n %s\n %s\nalone:\n %s\n %s", i, i, reused.lines[i], reused.events[i], fresh.lines[0], fresh.events[0])
		}
	}
	if len(l.payload) != 0 || len(l.event.Input) != 0 || len(l.event.Output) != 0 || l.event.DecisionID != "" {
		t.Errorf("the worker keeps the last report: payload %v, event %+v", l.payload, l.event)
	}
	for _, h := range l.event.Hooks[:cap(l.event.Hooks)] {
		if h != (Hook{}) {
			t.Errorf("the worker keeps a hook of the last report: %+v", h)
		}
	}
}

// panicky is a payload value whose encoding panics.
type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("secret value") }

// An event whose encoding panics is dropped and counted; the worker writes the next.
func TestLogger_PanickingEncodingDropsTheEvent(t *testing.T) {
	gen, rules := loadRules(t, "")
	file, path := tempFileSink(t)
	mp, read := metrics(t)
	l, err := New(Options{Rules: rules, Sinks: []Sink{file, NewLogSink(io.Discard, nil, true)}, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	bad := stageReport("bad", gen)
	bad.Metadata["x"] = panicky{}
	rules1, known := rules(gen)
	l.process(pending{stage: bad, rules: rules1, known: known})
	l.process(pending{stage: stageReport("good", gen), rules: rules1, known: known})
	closeLogger(t, l)
	events := readEvents(t, path)
	if len(events) != 1 || events[0].RequestID != "good" {
		t.Fatalf("events %+v, want the good one alone", events)
	}
	if n := read("agentd.decision_log.dropped", "reason=encode"); n != 1 {
		t.Errorf("encode drops = %d, want 1", n)
	}
}
