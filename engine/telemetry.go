package engine

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName is the OpenTelemetry scope of the engine's spans and metrics.
const InstrumentationName = "github.com/agentd-dev/agentd/engine"

// Span attribute keys set on every hook span.
const (
	AttrFailurePolicy = "pipeline.hook.failure_policy"
	AttrAction        = "pipeline.hook.action"
	AttrReason        = "pipeline.hook.reason"
	// AttrCause is set on the span of a failed invocation only.
	AttrCause = "pipeline.hook.cause"
)

// MetricShortCircuitDecision counts before_planning short-circuit decisions by the
// bounded labels reason, kind and status. Hook names and sources are never labels
// (docs/semantics.md §3.8).
const MetricShortCircuitDecision = "orchestration.pipeline.short_circuit.decision"

// EventShortCircuitDecision is the span event an accepted short-circuit decision adds
// to its hook's span, with the same reason, kind and status: the trace side of the
// metric, where the hook is known.
const EventShortCircuitDecision = "pipeline.short_circuit.decision"

// telemetry holds the pipeline's instruments. tracer is nil for a no-op provider, so
// that an untraced pipeline does not even put a span in each hook's context.
type telemetry struct {
	tracer    trace.Tracer
	decisions metric.Int64Counter
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (telemetry, error) {
	counter, err := mp.Meter(InstrumentationName).Int64Counter(MetricShortCircuitDecision,
		metric.WithDescription("before_planning short-circuit decisions by reason, kind and status"))
	if err != nil {
		return telemetry{}, err
	}
	t := telemetry{decisions: counter}
	if _, noop := tp.(tracenoop.TracerProvider); !noop {
		t.tracer = tp.Tracer(InstrumentationName)
	}
	return t, nil
}

// start opens the span of hook e; the span is nil when tracing is off.
func (t telemetry) start(ctx context.Context, e entry) (context.Context, trace.Span) {
	if t.tracer == nil {
		return ctx, nil
	}
	return t.tracer.Start(ctx, e.span)
}

// end stamps the decision on span, records err with its exact text and ends the span.
func (t telemetry) end(span trace.Span, d DecisionRecord, err error) {
	if span == nil {
		return
	}
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(
		attribute.String(AttrFailurePolicy, string(d.FailurePolicy)),
		attribute.String(AttrAction, string(d.Action)),
		attribute.String(AttrReason, string(d.Reason)),
	)
	if d.Cause != "" {
		span.SetAttributes(attribute.String(AttrCause, string(d.Cause)))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// shortCircuit counts one decision and, when it is accepted, adds the decision event to
// span (nil when tracing is off).
func (t telemetry) shortCircuit(ctx context.Context, span trace.Span, reason Reason, kind ShortCircuitKind, accepted bool) {
	k := string(kind)
	if kind != KindAuthoritative && kind != KindCache {
		k = "unknown"
	}
	status := "rejected"
	if accepted {
		status = "accepted"
	}
	attrs := []attribute.KeyValue{
		attribute.String("reason", string(reason)),
		attribute.String("kind", k),
		attribute.String("status", status),
	}
	t.decisions.Add(ctx, 1, metric.WithAttributes(attrs...))
	if accepted && span != nil {
		span.AddEvent(EventShortCircuitDecision, trace.WithAttributes(attrs...))
	}
}
