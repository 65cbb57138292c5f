package decisionlog

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// Sink is where events go: the JSON log (NewLogSink), a file (NewFileSink) or an HTTP
// endpoint (NewHTTPSink). The Logger's worker is the only caller of write and flush,
// one event at a time; close is called once, after the worker stopped.
type Sink interface {
	// name is the sink's metric label.
	name() string
	// wants says what the sink reads of an event: its payload, its JSON encoding.
	wants() wants
	// bind gives the sink the logger's instruments, before the first write.
	bind(m *instruments)
	// write takes one event and, when the sink wants it, its JSON encoding, which is
	// the worker's buffer: valid until write returns (a sink that keeps it copies it).
	write(e *Event, line []byte)
	// flush writes out what the sink buffered; the worker calls it when it is idle.
	flush()
	close(ctx context.Context) error
}

type wants struct{ payload, line bool }

// NewLogSink writes each stage and check event as one JSON log line ("stage
// decision", "operation check", "shadow disagreement") at info level, when level (nil:
// info) lets info through (a daemon whose level never does has no use for the sink).
// A line has the shape of the daemon's other lines (a slog.JSONHandler's): time, level
// and msg, then the event's attributes; strings are escaped as encoding/json escapes
// them with <, > and & as they are (as slog does, but for \b and \f, which slog writes
// as \u0008 and \u000c), and a value with no JSON encoding is written as slog writes
// one, "!ERROR:" and the error (whose wording for a time out of range differs from
// slog's). The payload (masked) is in the line only when payloads is set. Refusal
// events are left out: the server logs a refused call as a "stage refused" warning.
//
// Lines are gathered and written out when the logger flushes its sinks, after each
// batch of events (see linger), in writes of whole lines of at most lineWrite bytes:
// one write per batch instead of one per event, and no line of another writer on w is
// ever cut into one of these (writes to a pipe of at most PIPE_BUF bytes are atomic).
// w must be safe for the other writers that share it.
func NewLogSink(w io.Writer, level slog.Leveler, payloads bool) Sink {
	if level == nil {
		level = slog.LevelInfo
	}
	return &logSink{level: level, lines: &lineBatch{w: w}, payloads: payloads, now: time.Now}
}

type logSink struct {
	level    slog.Leveler
	lines    *lineBatch
	payloads bool
	in       *instruments
	pending  int              // lines gathered since the last flush
	now      func() time.Time // the lines' time
}

func (s *logSink) name() string         { return "log" }
func (s *logSink) wants() wants         { return wants{payload: s.payloads} }
func (s *logSink) bind(in *instruments) { s.in = in }
func (s *logSink) close(context.Context) error {
	s.flush()
	return nil
}

func (s *logSink) flush() {
	s.lines.flush()
	if s.pending > 0 {
		s.in.wrote("log", s.pending)
		s.pending = 0
	}
}

// lineWrite bounds one write of gathered lines: PIPE_BUF on Linux.
const lineWrite = 4096

// lineBatch gathers the lines a handler writes (a slog handler writes each record in
// one Write) until flush. Only the logger's worker writes and flushes it.
type lineBatch struct {
	w   io.Writer
	buf []byte
}

// add is called after a line was appended to b.buf: it flushes when much is gathered.
func (b *lineBatch) add() {
	if len(b.buf) >= 64<<10 {
		b.flush()
	}
}

// flush writes what was gathered in writes of whole lines of at most lineWrite bytes
// (a longer line alone), and forgets it even when a write fails, as a log does.
func (b *lineBatch) flush() {
	rest := b.buf
	for len(rest) > 0 {
		n := len(rest)
		if n > lineWrite {
			if i := bytes.LastIndexByte(rest[:lineWrite], '\n'); i >= 0 {
				n = i + 1
			} else if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				n = i + 1
			}
		}
		_, _ = b.w.Write(rest[:n])
		rest = rest[n:]
	}
	b.buf = b.buf[:0]
}

var logMessages = map[string]string{
	config.EventStage:  "stage decision",
	config.EventCheck:  "operation check",
	config.EventShadow: "shadow disagreement",
}

func (s *logSink) write(e *Event, _ []byte) {
	msg, ok := logMessages[e.Kind]
	if !ok || s.level.Level() > slog.LevelInfo {
		return
	}
	s.lines.buf = s.appendLine(s.lines.buf, msg, e)
	s.lines.add()
	s.pending++
}

// appendLine appends e's line to b: what slog.JSONHandler writes for a record of msg
// at info level with the attributes below (TestLogSink_LinesAreSlogs).
func (s *logSink) appendLine(b []byte, msg string, e *Event) []byte {
	b = append(b, `{"time":"`...)
	b = s.now().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":`...)
	b = engine.AppendJSONStringUnescapedHTML(b, msg)
	key := func(k string) { b = appendKey(b, k) }
	value := func(k string, v any, ok bool) {
		if !ok {
			return
		}
		key(k)
		var err error
		if b, err = engine.AppendJSONUnescapedHTML(b, v); err != nil {
			b = engine.AppendJSONStringUnescapedHTML(b, "!ERROR:"+err.Error()) // as slog writes it
		}
	}
	for _, kv := range lineStrings(e) {
		if kv[1] != "" {
			key(kv[0])
			b = engine.AppendJSONStringUnescapedHTML(b, kv[1])
		}
	}
	key("duration_ms")
	if n, err := engine.AppendJSONFloat(b, e.DurationMS); err == nil {
		b = n
	} else {
		b = engine.AppendJSONStringUnescapedHTML(b, "!ERROR:"+err.Error())
	}
	if e.Kind == config.EventStage {
		key("hooks")
		b = strconv.AppendInt(b, int64(len(e.Hooks)), 10)
	}
	value("violations", e.Violations, len(e.Violations) > 0)
	value("denial", e.Denial, e.Denial != nil)
	if n := len(e.WouldDeny); n > 0 {
		key("would_deny")
		b = strconv.AppendInt(b, int64(n), 10)
	}
	value("shadow", e.Shadow, e.Shadow != nil)
	value("input", e.Input, s.payloads && len(e.Input) > 0)
	value("output", e.Output, s.payloads && len(e.Output) > 0)
	return append(b, "}\n"...)
}

// lineStrings are the string attributes of e's line, in order; empty ones are left out.
func lineStrings(e *Event) [9][2]string {
	return [9][2]string{
		{"decision_id", e.DecisionID}, {"request_id", e.RequestID}, {"generation", e.Generation},
		{"policy_revision", e.PolicyRevision}, {"stage", string(e.Stage)}, {"operation", string(e.Operation)},
		{"step_id", e.StepID}, {"outcome", e.Outcome}, {"cause", string(e.Cause)},
	}
}
