package decisionlog

import (
	"bytes"
	"context"
	"io"
	"log/slog"

	"github.com/agentd-dev/agentd/config"
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

// NewLogSink writes each stage and check event as one structured log line ("stage
// decision", "operation check", "shadow disagreement") at info level, as a
// slog.JSONHandler with opts writes it to w. The payload (masked) is in the line only
// when payloads is set. Refusal events are left out: the server logs a refused call as
// a "stage refused" warning.
//
// Lines are gathered and written out when the logger flushes its sinks, after each
// batch of events (see linger), in writes of whole lines of at most lineWrite bytes:
// one write per batch instead of one per event, and no line of another writer on w is
// ever cut into one of these (writes to a pipe of at most PIPE_BUF bytes are atomic).
// w must be safe for the other writers that share it.
func NewLogSink(w io.Writer, opts *slog.HandlerOptions, payloads bool) Sink {
	b := &lineBatch{w: w}
	return &logSink{logger: slog.New(slog.NewJSONHandler(b, opts)), lines: b, payloads: payloads}
}

type logSink struct {
	logger   *slog.Logger
	lines    *lineBatch
	payloads bool
	in       *instruments
}

func (s *logSink) name() string         { return "log" }
func (s *logSink) wants() wants         { return wants{payload: s.payloads} }
func (s *logSink) bind(in *instruments) { s.in = in }
func (s *logSink) flush()               { s.lines.flush() }
func (s *logSink) close(context.Context) error {
	s.lines.flush()
	return nil
}

// lineWrite bounds one write of gathered lines: PIPE_BUF on Linux.
const lineWrite = 4096

// lineBatch gathers the lines a handler writes (a slog handler writes each record in
// one Write) until flush. Only the logger's worker writes and flushes it.
type lineBatch struct {
	w   io.Writer
	buf []byte
}

func (b *lineBatch) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) >= 64<<10 {
		b.flush()
	}
	return len(p), nil
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
	ctx := context.Background()
	if !ok || !s.logger.Enabled(ctx, slog.LevelInfo) {
		return
	}
	attrs := make([]slog.Attr, 0, 16)
	str := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	str("decision_id", e.DecisionID)
	str("request_id", e.RequestID)
	str("generation", e.Generation)
	str("policy_revision", e.PolicyRevision)
	str("stage", string(e.Stage))
	str("operation", string(e.Operation))
	str("step_id", e.StepID)
	str("outcome", e.Outcome)
	str("cause", string(e.Cause))
	attrs = append(attrs, slog.Float64("duration_ms", e.DurationMS))
	if e.Kind == config.EventStage {
		attrs = append(attrs, slog.Int("hooks", len(e.Hooks)))
	}
	if len(e.Violations) > 0 {
		attrs = append(attrs, slog.Any("violations", e.Violations))
	}
	if e.Denial != nil {
		attrs = append(attrs, slog.Any("denial", e.Denial))
	}
	if n := len(e.WouldDeny); n > 0 {
		attrs = append(attrs, slog.Int("would_deny", n))
	}
	if e.Shadow != nil {
		attrs = append(attrs, slog.Any("shadow", e.Shadow))
	}
	if s.payloads {
		if e.Input != nil {
			attrs = append(attrs, slog.Any("input", e.Input))
		}
		if e.Output != nil {
			attrs = append(attrs, slog.Any("output", e.Output))
		}
	}
	s.logger.LogAttrs(ctx, slog.LevelInfo, msg, attrs...)
	s.in.wrote("log", 1)
}
