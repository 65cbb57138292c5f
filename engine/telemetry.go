package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/agentd-dev/agentd/engine/op"
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
	// payloads puts tool arguments and results on execute_tool spans (WithSpanPayloads).
	payloads bool
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, payloads bool) (telemetry, error) {
	counter, err := mp.Meter(InstrumentationName).Int64Counter(MetricShortCircuitDecision,
		metric.WithDescription("before_planning short-circuit decisions by reason, kind and status"))
	if err != nil {
		return telemetry{}, err
	}
	t := telemetry{decisions: counter, payloads: payloads}
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

// OpenTelemetry GenAI semantic-convention attribute keys of the driver's spans.
const (
	AttrGenAIOperation      = "gen_ai.operation.name"
	AttrGenAIConversationID = "gen_ai.conversation.id"
	AttrGenAIToolName       = "gen_ai.tool.name"
	AttrGenAIToolCallID     = "gen_ai.tool.call.id"
	AttrGenAIToolArguments  = "gen_ai.tool.call.arguments"
	AttrGenAIToolResult     = "gen_ai.tool.call.result"
	AttrErrorType           = "error.type"
	// AttrStage names the stage of an invoke_agent span (agentd's own attribute).
	AttrStage = "agentd.stage"
	// AttrToolPhase tells an execute_tool span of a check (check) from one of a finish
	// (finish) (agentd's own attribute).
	AttrToolPhase = "agentd.tool.phase"
)

// RequestSpanContext is the span context the spans of request id descend from when a
// call of the request carries no trace context of its own: a trace id and a parent
// span id derived from the id (SHA-256), remote and sampled. Every call of a request,
// on any replica, thus lands in one trace, though the request spans several HTTP
// calls; the parent span itself is never exported (a trace view shows the calls as
// children of a missing root). A gateway's own spans (the upstream call) join that
// trace the same way.
func RequestSpanContext(id string) trace.SpanContext {
	sum := sha256.Sum256([]byte("agentd request " + id))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// RequestContext returns ctx when it carries a trace context, else ctx with request
// id's (RequestSpanContext) as its remote parent.
func RequestContext(ctx context.Context, id string) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, RequestSpanContext(id))
}

// startStage opens the invoke_agent span of a stage call of request id (nil when
// tracing is off): the request's trace, the request id as the conversation id.
func (t telemetry) startStage(ctx context.Context, id string, stage Stage) (context.Context, trace.Span) {
	if t.tracer == nil {
		return ctx, nil
	}
	ctx, span := t.tracer.Start(RequestContext(ctx, id), "invoke_agent")
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrGenAIOperation, "invoke_agent"),
			attribute.String(AttrGenAIConversationID, id), attribute.String(AttrStage, string(stage)))
	}
	return ctx, span
}

// stageFailures are the stage outcomes an invoke_agent span reports as an error, with
// the outcome as its error.type.
var stageFailures = map[CallOutcome]bool{OutcomeRejected: true, OutcomeInvalidPlan: true, OutcomeHookContract: true, OutcomePanic: true}

// endStage ends a stage call's span (nil when tracing is off).
func endStage(span trace.Span, outcome CallOutcome, err error) {
	if span == nil {
		return
	}
	if span.IsRecording() && (stageFailures[outcome] || err != nil) {
		kind := string(outcome)
		if !stageFailures[outcome] {
			kind = string(CauseOf(err))
		}
		span.SetAttributes(attribute.String(AttrErrorType, cmp.Or(kind, "error")))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		} else {
			span.SetStatus(codes.Error, kind)
		}
	}
	span.End()
}

// toolName is the gen_ai.tool.name of a tool call: its capability, else its agent.
func toolName(c op.Call) string { return cmp.Or(c.Capability, c.AgentName) }

// startTool opens the execute_tool span of a tool_call check (nil when tracing is off,
// or for another operation): arguments only when payloads are on.
func (t telemetry) startTool(ctx context.Context, c op.Call) (context.Context, trace.Span) {
	if t.tracer == nil || c.Operation != op.ToolCall {
		return ctx, nil
	}
	name := toolName(c)
	ctx, span := t.tracer.Start(RequestContext(ctx, c.RequestID), "execute_tool "+name)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrGenAIOperation, "execute_tool"), attribute.String(AttrGenAIToolName, name),
			attribute.String(AttrGenAIToolCallID, c.StepID), attribute.String(AttrGenAIConversationID, c.RequestID),
			attribute.String(AttrToolPhase, "check"))
		if t.payloads && c.Parameters != nil {
			if b, err := AppendJSON(nil, c.Parameters); err == nil {
				span.SetAttributes(attribute.String(AttrGenAIToolArguments, string(b)))
			}
		}
	}
	return ctx, span
}

// endTool ends a check's span with its outcome: a denial's code, or guard_error, or
// the refusal's code as error.type.
func endTool(span trace.Span, outcome CallOutcome, err error) {
	if span == nil {
		return
	}
	if span.IsRecording() && err != nil {
		kind := string(outcome)
		if den, ok := op.AsDenial(err); ok {
			kind = den.Code
		} else if r, ok := AsRefusal(err); ok {
			kind = string(r.Code)
		}
		span.SetAttributes(attribute.String(AttrErrorType, cmp.Or(kind, "error")))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// finishTool emits the execute_tool span of a reported finish of step of request id,
// back-dated by the run's duration: its end is now. A failed run carries error.type
// tool_failed; the response is an attribute only when payloads are on.
func (t telemetry) finishTool(ctx context.Context, f Finish, step *RoutingStep, now time.Time) {
	if t.tracer == nil {
		return
	}
	name := f.StepID
	if step != nil {
		name = cmp.Or(step.Capability(), step.AgentName, name)
	}
	_, span := t.tracer.Start(RequestContext(ctx, f.RequestID), "execute_tool "+name, trace.WithTimestamp(now.Add(-f.Duration)))
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrGenAIOperation, "execute_tool"), attribute.String(AttrGenAIToolName, name),
			attribute.String(AttrGenAIToolCallID, f.StepID), attribute.String(AttrGenAIConversationID, f.RequestID),
			attribute.String(AttrToolPhase, "finish"))
		if f.Status == RunFailed {
			span.SetAttributes(attribute.String(AttrErrorType, "tool_failed"))
			span.SetStatus(codes.Error, cmp.Or(f.Error, "tool_failed"))
		}
		if t.payloads && f.Response != nil {
			if b, err := AppendJSON(nil, f.Response); err == nil {
				span.SetAttributes(attribute.String(AttrGenAIToolResult, string(b)))
			}
		}
	}
	span.End(trace.WithTimestamp(now))
}
