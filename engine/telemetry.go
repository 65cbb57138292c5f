package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
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
	return telemetry{decisions: counter, payloads: payloads, tracer: Tracer(tp, InstrumentationName)}, nil
}

// Tracer returns tp's tracer of scope, nil for a nil or no-op provider: a transport
// (and the pipeline) with no tracer builds no span, not even a no-op one.
func Tracer(tp trace.TracerProvider, scope string) trace.Tracer {
	if _, noop := tp.(tracenoop.TracerProvider); tp == nil || noop {
		return nil
	}
	return tp.Tracer(scope)
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
	// AttrStage names the stage of a stage call's span (agentd's own attribute).
	AttrStage = "agentd.stage"
	// AttrLifecycle is the lifecycle a request's invoke_agent span ended it with,
	// completed or failed (agentd's own attribute).
	AttrLifecycle = "agentd.request.lifecycle"
	// AttrToolPhase tells an execute_tool span of a check (check) from one of a finish
	// (finish) (agentd's own attribute).
	AttrToolPhase = "agentd.tool.phase"
)

// RequestSpanContext is the span context of request id's invoke_agent span when its
// calls carry no trace context of their own: a trace id and a span id derived from the
// id (SHA-256), remote and sampled. Every call of a request, on any replica, thus lands
// in one trace, though the request spans several HTTP calls.
func RequestSpanContext(id string) trace.SpanContext {
	return requestSpanContext(trace.SpanContext{}, id)
}

// requestSpanContext is the span context of request id's invoke_agent span as a call
// whose own trace context is caller sees it: in caller's trace (with its flags and
// trace state) when caller is valid, else in the trace derived from the id; its span id
// is always the one derived from the id, so the invoke_agent span the request's end
// emits (endRequest) is the parent its calls' spans name.
func requestSpanContext(caller trace.SpanContext, id string) trace.SpanContext {
	sum := sha256.Sum256([]byte("agentd request " + id))
	cfg := trace.SpanContextConfig{TraceFlags: trace.FlagsSampled, Remote: true}
	copy(cfg.TraceID[:], sum[:16])
	copy(cfg.SpanID[:], sum[16:24])
	if caller.IsValid() {
		cfg.TraceID, cfg.TraceFlags, cfg.TraceState = caller.TraceID(), caller.TraceFlags(), caller.TraceState()
	}
	return trace.NewSpanContext(cfg)
}

// RequestContext returns ctx with the span context of request id's invoke_agent span
// (in the trace of ctx's own span context when it has one, see requestSpanContext) as
// its remote parent: the spans started from it are the request's. A gateway's own
// spans (the upstream call) join the request this way.
func RequestContext(ctx context.Context, id string) context.Context {
	return trace.ContextWithRemoteSpanContext(ctx, requestSpanContext(trace.SpanContextFromContext(ctx), id))
}

// requestParent is RequestContext for a span of the driver's of request id, whose
// state st (nil: unknown) says how it was opened: with the span start options that
// link the span to the caller's span context when ctx carried one (the span's parent
// is the request's span, not the caller's). A call without one is in the trace of the
// call that opened the request (RequestState.TraceParent), if that call had one.
func requestParent(ctx context.Context, st *RequestState, id string, opts ...trace.SpanStartOption) (context.Context, []trace.SpanStartOption) {
	caller := trace.SpanContextFromContext(ctx)
	if caller.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: caller}))
	} else {
		caller = openerOf(st)
	}
	return trace.ContextWithRemoteSpanContext(ctx, requestSpanContext(caller, id)), opts
}

// traceParentOf is the W3C traceparent of ctx's span context (version 00), "" when
// it has none. (The engine encodes it itself: OpenTelemetry's propagation package
// depends on net/http, which the core does not.)
func traceParentOf(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// parseTraceParent reads a version 00 W3C traceparent as traceParentOf writes it: a
// remote span context, invalid when s is anything else (an all-zero id included).
func parseTraceParent(s string) trace.SpanContext {
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return trace.SpanContext{}
	}
	tid, err := trace.TraceIDFromHex(s[3:35])
	if err != nil {
		return trace.SpanContext{}
	}
	sid, err := trace.SpanIDFromHex(s[36:52])
	if err != nil {
		return trace.SpanContext{}
	}
	flags, err := hex.DecodeString(s[53:])
	if err != nil {
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]), Remote: true})
}

// openerOf is the span context of the call that opened request st (its TraceParent),
// invalid when st is nil or that call carried none.
func openerOf(st *RequestState) trace.SpanContext {
	if st == nil || st.TraceParent == "" {
		return trace.SpanContext{}
	}
	return parseTraceParent(st.TraceParent)
}

// IDGenerator is the span and trace id generator of a TracerProvider the driver traces
// into (sdktrace.WithIDGenerator): random ids, except for the invoke_agent span of a
// request, whose ids it derives from the request id (requestSpanContext), so that the
// span is the parent its calls' spans, exported earlier and maybe by other replicas,
// already name. With another generator that span gets random ids of its own and the
// calls' spans name a parent that is never exported.
type IDGenerator struct{}

// fixedIDsKey is the context key of the span context endRequest starts a span with.
type fixedIDsKey struct{}

// NewIDs implements sdktrace.IDGenerator.
func (IDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if sc, ok := ctx.Value(fixedIDsKey{}).(trace.SpanContext); ok {
		return sc.TraceID(), sc.SpanID()
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, randomSpanID()
}

// NewSpanID implements sdktrace.IDGenerator.
func (IDGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if sc, ok := ctx.Value(fixedIDsKey{}).(trace.SpanContext); ok {
		return sc.SpanID()
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

// startStage opens the span of a stage call of request st (nil when tracing is off),
// pipeline.stage.<stage>: a child of the request's invoke_agent span, linked to the
// caller's span when the call carried trace context.
func (t telemetry) startStage(ctx context.Context, st *RequestState, stage Stage) (context.Context, trace.Span) {
	if t.tracer == nil {
		return ctx, nil
	}
	id := st.ID
	ctx, opts := requestParent(ctx, st, id)
	ctx, span := t.tracer.Start(ctx, "pipeline.stage."+string(stage), opts...)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrGenAIConversationID, id), attribute.String(AttrStage, string(stage)))
	}
	return ctx, span
}

// endRequest emits request st's invoke_agent span once a call of caller (the call's
// own trace context, or none) ended the request: from the request's opening to now,
// with the ids requestSpanContext derives (see IDGenerator), a child of caller, else
// of the call that opened the request, when either carried trace context, else a root.
// A failed request carries its cause as error.type.
func (t telemetry) endRequest(caller trace.SpanContext, st *RequestState, err error, now time.Time) {
	if t.tracer == nil {
		return
	}
	if !caller.IsValid() {
		caller = openerOf(st)
	}
	ctx := context.Background()
	if caller.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, caller)
	}
	ctx = context.WithValue(ctx, fixedIDsKey{}, requestSpanContext(caller, st.ID))
	opened := st.OpenedAt
	if opened.IsZero() || opened.After(now) {
		opened = now
	}
	_, span := t.tracer.Start(ctx, "invoke_agent", trace.WithTimestamp(opened))
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrGenAIOperation, "invoke_agent"), attribute.String(AttrGenAIConversationID, st.ID),
			attribute.String(AttrLifecycle, string(st.Lifecycle)))
		if st.Lifecycle == LifecycleFailed {
			kind := cmp.Or(string(CauseOf(err)), "request_failed")
			span.SetAttributes(attribute.String(AttrErrorType, kind))
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			} else {
				span.SetStatus(codes.Error, kind)
			}
		}
	}
	span.End(trace.WithTimestamp(now))
}

// stageFailures are the stage outcomes a stage call's span reports as an error, with
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

// startTool opens the execute_tool span of a tool_call check of request st (nil:
// unknown) (nil when tracing is off, or for another operation): arguments only when
// payloads are on.
func (t telemetry) startTool(ctx context.Context, st *RequestState, c op.Call) (context.Context, trace.Span) {
	if t.tracer == nil || c.Operation != op.ToolCall {
		return ctx, nil
	}
	name := toolName(c)
	ctx, opts := requestParent(ctx, st, c.RequestID)
	ctx, span := t.tracer.Start(ctx, "execute_tool "+name, opts...)
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

// finishTool emits the execute_tool span of a reported finish of step of request st,
// back-dated by the run's duration: its end is now. A failed run carries error.type
// tool_failed; the response is an attribute only when payloads are on.
func (t telemetry) finishTool(ctx context.Context, st *RequestState, f Finish, step *RoutingStep, now time.Time) {
	if t.tracer == nil {
		return
	}
	name := f.StepID
	if step != nil {
		name = cmp.Or(step.Capability(), step.AgentName, name)
	}
	ctx, opts := requestParent(ctx, st, f.RequestID, trace.WithTimestamp(now.Add(-f.Duration)))
	_, span := t.tracer.Start(ctx, "execute_tool "+name, opts...)
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
