package decisionlog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// writes records every Write it is given.
type writes struct{ got []string }

func (w *writes) Write(p []byte) (int, error) {
	w.got = append(w.got, string(p))
	return len(p), nil
}

// Lines wait for flush, which writes them whole, at most lineWrite bytes at a time
// (a longer line alone), in order, and keeps nothing.
func TestLineBatch_WritesWholeLinesAtFlush(t *testing.T) {
	w := &writes{}
	b := &lineBatch{w: w}
	var want strings.Builder
	for i := range 200 {
		line := strings.Repeat(strconv.Itoa(i%10), 1+i*7%300) + "\n"
		if i == 100 {
			line = strings.Repeat("L", 3*lineWrite) + "\n"
		}
		b.buf = append(b.buf, line...)
		b.add()
		want.WriteString(line)
	}
	if len(w.got) != 0 {
		t.Fatalf("%d writes before flush", len(w.got))
	}
	b.flush()
	for i, p := range w.got {
		if !strings.HasSuffix(p, "\n") || len(p) > lineWrite && strings.Count(p, "\n") > 1 {
			t.Errorf("write %d: %d bytes, %d lines: not whole lines within %d bytes", i, len(p), strings.Count(p, "\n"), lineWrite)
		}
	}
	if got := strings.Join(w.got, ""); got != want.String() {
		t.Errorf("wrote %d bytes, want the %d gathered", len(got), want.Len())
	}
	b.flush()
	if n := len(w.got); n < 3 || strings.Join(w.got, "") != want.String() {
		t.Errorf("a second flush wrote again: %d writes", n)
	}
}

// slogLine is what a slog.JSONHandler writes for e: the log sink's line written through
// slog, attribute by attribute, the oracle of TestLogSink_LinesAreSlogs.
func slogLine(t *testing.T, at time.Time, e *Event, payloads bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	r := slog.NewRecord(at, slog.LevelInfo, logMessages[e.Kind], 0)
	for _, kv := range lineStrings(e) {
		if kv[1] != "" {
			r.AddAttrs(slog.String(kv[0], kv[1]))
		}
	}
	r.AddAttrs(slog.Float64("duration_ms", e.DurationMS))
	if e.Kind == config.EventStage {
		r.AddAttrs(slog.Int("hooks", len(e.Hooks)))
	}
	if len(e.Violations) > 0 {
		r.AddAttrs(slog.Any("violations", e.Violations))
	}
	if e.Denial != nil {
		r.AddAttrs(slog.Any("denial", e.Denial))
	}
	if n := len(e.WouldDeny); n > 0 {
		r.AddAttrs(slog.Int("would_deny", n))
	}
	if e.Shadow != nil {
		r.AddAttrs(slog.Any("shadow", e.Shadow))
	}
	if payloads && e.Input != nil {
		r.AddAttrs(slog.Any("input", e.Input))
	}
	if payloads && e.Output != nil {
		r.AddAttrs(slog.Any("output", e.Output))
	}
	if err := slog.NewJSONHandler(&buf, nil).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The log sink writes each event's line as slog.JSONHandler writes it, byte for byte
// (strings with HTML characters, U+2028, invalid UTF-8 and control characters; the
// payload; every kind of event), but for \b and \f, which are only the same JSON.
func TestLogSink_LinesAreSlogs(t *testing.T) {
	gen, rules := loadRules(t, "decision_log:\n  mask: [metadata.email]\n")
	rules1, known := rules(gen)
	odd := "<a href=\"x\">&amp;</a> \u2028\u2029 \xff\xfe é漢字 \t\n\r\x00\x1f\x7f"
	stage := stageReport(odd, gen)
	stage.Duration = 1234567 * time.Microsecond
	stage.Violations = []engine.Violation{{Code: "not_allowed", StepID: "step-1", Message: odd}}
	stage.Metadata["note"] = odd
	stage.Metadata["n"] = 1e21
	check := checkReport("r2", gen)
	at := time.Date(2026, 12, 2, 4, 5, 6, 789012345, time.FixedZone("", 5*3600+1800))
	shadow := &Event{SchemaVersion: SchemaVersion, Kind: config.EventShadow, DecisionID: "d3", RequestID: "r3", Stage: engine.StageAfterPlanning,
		Outcome: "accepted", Shadow: &Shadow{Generation: "g2", Change: compare.NewlyDenied, Live: compare.Verdict{Outcome: engine.OutcomeAccepted},
			Verdict: compare.Verdict{Outcome: engine.OutcomeRejected, Violations: stage.Violations}}}
	nan := stageReport("r5", gen)
	nan.Metadata["ratio"] = math.NaN() // no JSON encoding: "!ERROR:..." as slog writes it
	for _, payloads := range []bool{false, true} {
		for name, p := range map[string]pending{
			"NaN":    {stage: nan, rules: rules1, known: known},
			"stage":  {stage: stage, rules: rules1, known: known},
			"check":  {check: check, rules: rules1, known: known},
			"turn":   {check: turnReport("r4", gen), rules: rules1, known: known},
			"shadow": {built: shadow},
		} {
			sink := NewLogSink(nil, nil, payloads).(*logSink)
			sink.now = func() time.Time { return at }
			l := &Logger{opts: Options{Sinks: []Sink{sink}}, wants: wants{payload: payloads, line: false}}
			l.process(p)
			got := sink.lines.buf
			want := slogLine(t, at, p.event(new(Event)), payloads)
			if payloads && p.payload(nil) != nil {
				e := p.event(new(Event))
				masked, _, _ := p.rules.Mask(p.payload(nil))
				e.setPayload(masked)
				want = slogLine(t, at, e, true)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s (payloads %v):\n got  %s\n slog %s", name, payloads, got, want)
			}
			checkLineKeys(t, got)
		}
	}
	e := &Event{Kind: config.EventStage, RequestID: "\b\f", Outcome: "accepted"}
	got := (&logSink{now: func() time.Time { return at }}).appendLine(nil, logMessages[e.Kind], e)
	var a, b map[string]any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(slogLine(t, at, e, false), &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("\\b and \\f: %v, slog %v", a, b)
	}
}

// lineKeys are the members of a decision line in their order, written out here rather
// than taken from the sink.
var lineKeys = []string{"time", "level", "msg", "decision_id", "request_id", "generation", "policy_revision", "stage",
	"operation", "step_id", "outcome", "cause", "duration_ms", "hooks", "violations", "denial", "would_deny", "shadow", "input", "output"}

// checkLineKeys fails unless line's members are lineKeys in order (some left out), with
// time, level, msg, decision_id, outcome and duration_ms among them.
func checkLineKeys(t *testing.T, line []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	var keys []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	at := 0
	for _, k := range keys {
		i := slices.Index(lineKeys[at:], k)
		if i < 0 {
			t.Fatalf("members %v: %q out of order or unknown (want the order of %v)", keys, k, lineKeys)
		}
		at += i + 1
	}
	for _, k := range []string{"time", "level", "msg", "decision_id", "outcome", "duration_ms"} {
		if !slices.Contains(keys, k) {
			t.Errorf("members %v: no %q", keys, k)
		}
	}
}

// Above info, the log sink writes nothing.
func TestLogSink_QuietAboveInfo(t *testing.T) {
	gen, _ := loadRules(t, "")
	for _, level := range []slog.Level{slog.LevelWarn, slog.LevelError} {
		sink := NewLogSink(nil, level, true).(*logSink)
		e := new(Event)
		stageEvent(e, stageReport("r", gen))
		sink.write(e, nil)
		if len(sink.lines.buf) != 0 || sink.pending != 0 {
			t.Errorf("level %v: wrote %q", level, sink.lines.buf)
		}
	}
}
