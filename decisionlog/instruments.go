package decisionlog

import (
	"context"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
)

// Drop reasons, the reason label of agentd.decision_log.dropped; its sink label is the
// sink's name (log, file, http) or "logger" for an event dropped before any sink saw
// it. Every label is bounded.
const (
	DropQueueFull   = "queue_full"   // the logger's queue was full: the event was never built
	DropRule        = "drop_rule"    // a drop rule of the decision_log section matched
	DropBufferFull  = "buffer_full"  // the HTTP sink's buffer was full
	DropRejected    = "rejected"     // the HTTP endpoint refused a batch for good (a 4xx)
	DropWriteFailed = "write_failed" // the file could not be written
	DropShutdown    = "shutdown"     // still buffered when the daemon stopped
	DropEncode      = "encode"       // the event had no JSON encoding
)

// instruments count events written and dropped, by sink and reason.
type instruments struct {
	logger  *slog.Logger
	written metric.Int64Counter
	dropped metric.Int64Counter
	sets    sync.Map // [2]string{sink, reason} -> metric.MeasurementOption
}

func newInstruments(mp metric.MeterProvider, logger *slog.Logger) (*instruments, error) {
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := mp.Meter("github.com/agentd-dev/agentd/decisionlog")
	in := instruments{logger: logger}
	var err error
	if in.written, err = m.Int64Counter("agentd.decision_log.events", metric.WithDescription("decision events written, by sink")); err != nil {
		return nil, err
	}
	if in.dropped, err = m.Int64Counter("agentd.decision_log.dropped", metric.WithDescription("decision events not written, by sink and reason")); err != nil {
		return nil, err
	}
	return &in, nil
}

// warn logs a sink's failure.
func (in *instruments) warn(sink string, err error) {
	in.logger.Warn("decision log sink failed; its events are dropped until it recovers", "sink", sink, "error", err.Error())
}

func (in *instruments) wrote(sink string, n int) {
	in.written.Add(context.Background(), int64(n), in.labels(sink, ""))
}

func (in *instruments) drop(sink, reason string, n int) {
	in.dropped.Add(context.Background(), int64(n), in.labels(sink, reason))
}

// labels returns the attribute set of a sink and reason, built once: the labels are
// the package's constants, a handful of combinations.
func (in *instruments) labels(sink, reason string) metric.MeasurementOption {
	key := [2]string{sink, reason}
	if o, ok := in.sets.Load(key); ok {
		return o.(metric.MeasurementOption)
	}
	kvs := []attribute.KeyValue{attribute.String("sink", sink)}
	if reason != "" {
		kvs = append(kvs, attribute.String("reason", reason))
	}
	o, _ := in.sets.LoadOrStore(key, metric.WithAttributeSet(attribute.NewSet(kvs...)))
	return o.(metric.MeasurementOption)
}
