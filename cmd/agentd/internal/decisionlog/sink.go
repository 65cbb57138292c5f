package decisionlog

import (
	"context"
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
// decision", "operation check", "shadow disagreement") at info level. The payload
// (masked) is in the line only when payloads is set. Refusal events are left out: the
// server logs a refused call as a "stage refused" warning.
func NewLogSink(logger *slog.Logger, payloads bool) Sink {
	return &logSink{logger: logger, payloads: payloads}
}

type logSink struct {
	logger   *slog.Logger
	payloads bool
	in       *instruments
}

func (s *logSink) name() string              { return "log" }
func (s *logSink) wants() wants              { return wants{payload: s.payloads} }
func (s *logSink) bind(in *instruments)      { s.in = in }
func (s *logSink) flush()                    {}
func (*logSink) close(context.Context) error { return nil }

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
