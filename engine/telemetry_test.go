package engine_test

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentd-dev/agentd/engine"
)

// spanRecorder returns a tracer provider option and the recorder behind it.
func spanRecorder() (engine.Option, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	return engine.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))), sr
}

// spanDecision reads the three decision attributes of a span.
func spanDecision(s sdktrace.ReadOnlySpan) engine.DecisionRecord {
	var d engine.DecisionRecord
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case engine.AttrFailurePolicy:
			d.FailurePolicy = engine.FailurePolicy(kv.Value.AsString())
		case engine.AttrAction:
			d.Action = engine.Action(kv.Value.AsString())
		case engine.AttrReason:
			d.Reason = engine.Reason(kv.Value.AsString())
		case engine.AttrCause:
			d.Cause = engine.Cause(kv.Value.AsString())
		}
	}
	return d
}

// exceptionMessages lists the exception.message of every error event of a span.
func exceptionMessages(s sdktrace.ReadOnlySpan) []string {
	var msgs []string
	for _, ev := range s.Events() {
		for _, kv := range ev.Attributes {
			if kv.Key == "exception.message" {
				msgs = append(msgs, kv.Value.AsString())
			}
		}
	}
	return msgs
}

func TestTelemetry_SpanPerInvocation(t *testing.T) {
	opt, sr := spanRecorder()
	hookErr := errors.New(`vector store: "timeout" after 3 tries`)
	p := mustNew(t, []engine.Hook{
		decide("cache", cacheDecision("stale", map[string]string{"locale": "de"})),
		&legacyHook{name: "rag", fn: func(context.Context, *engine.PipelineContext) (*engine.ShortCircuit, error) { return nil, hookErr }},
		&planHook{name: "review"},
		&requiredHook{planHook{name: "governed"}},
		&executionHook{name: "audit"},
		&synthesisHook{name: "redact"},
	}, opt, engine.WithCatalog(testCatalog(t)))
	ctx := context.Background()
	// Spans carry the decision with recording off too.
	if _, err := p.BeforePlanning(ctx, newPctx(), engine.NewGate(map[string]string{"locale": "en"}, false), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AfterPlanning(ctx, newPctx(), threeStepPlan(), nil, nil); err != nil {
		t.Fatal(err)
	}
	p.AfterExecution(ctx, newPctx(), &engine.ExecutionResult{}, nil)
	p.AfterSynthesis(ctx, newPctx(), "r", nil)

	type want struct {
		name string
		dec  engine.DecisionRecord
		err  string
	}
	wants := []want{
		{"pipeline.hook.before_planning.cache", decision(engine.FailClosed, engine.ActionContinue, engine.ReasonCacheMismatch), ""},
		{"pipeline.hook.before_planning.rag", decision(engine.FailOpen, engine.ActionContinue, engine.ReasonHookError), hookErr.Error()},
		{"pipeline.hook.after_planning.review", decision(engine.FailOpen, engine.ActionContinue, engine.ReasonAccepted), ""},
		{"pipeline.hook.after_planning.governed", decision(engine.FailClosed, engine.ActionContinue, engine.ReasonAccepted), ""},
		{"pipeline.hook.after_execution.audit", decision(engine.FailOpen, engine.ActionContinue, engine.ReasonCompleted), ""},
		{"pipeline.hook.after_synthesis.redact", decision(engine.FailOpen, engine.ActionContinue, engine.ReasonCompleted), ""},
	}
	spans := sr.Ended()
	if len(spans) != len(wants) || len(sr.Started()) != len(wants) {
		t.Fatalf("%d spans ended (%d started), want %d", len(spans), len(sr.Started()), len(wants))
	}
	for i, w := range wants {
		s := spans[i]
		if s.Name() != w.name {
			t.Errorf("span %d name = %q, want %q", i, s.Name(), w.name)
		}
		if got := spanDecision(s); got != w.dec {
			t.Errorf("%s: attributes = %+v, want %+v", w.name, got, w.dec)
		}
		if w.err == "" {
			if s.Status().Code == codes.Error || len(exceptionMessages(s)) != 0 {
				t.Errorf("%s: error recorded on a successful invocation", w.name)
			}
			continue
		}
		if got := exceptionMessages(s); !reflect.DeepEqual(got, []string{w.err}) {
			t.Errorf("%s: recorded errors %q, want exactly %q", w.name, got, w.err)
		}
		if s.Status().Code != codes.Error || s.Status().Description != w.err {
			t.Errorf("%s: status = %+v, want Error %q", w.name, s.Status(), w.err)
		}
	}
}

func TestTelemetry_SpanIsParentOfHookContext(t *testing.T) {
	opt, sr := spanRecorder()
	var inner trace.SpanContext
	p := mustNew(t, []engine.Hook{&synthesisHook{name: "redact", fn: func(ctx context.Context, _ *engine.PipelineContext, r string) (string, error) {
		inner = trace.SpanContextFromContext(ctx)
		return r, nil
	}}}, opt)
	p.AfterSynthesis(context.Background(), newPctx(), "r", nil)
	if spans := sr.Ended(); len(spans) != 1 || spans[0].SpanContext().SpanID() != inner.SpanID() {
		t.Fatalf("the hook's context does not carry its invocation span")
	}
}

func TestTelemetry_RejectionsRecordedOnSpan(t *testing.T) {
	opt, sr := spanRecorder()
	p := mustNew(t, []engine.Hook{
		&planHook{name: "bad", fn: func(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
			plan.Steps[0].AgentName = "bank"
			return plan, nil
		}},
		&requiredHook{*failWith("governed", nil, errors.New("denied"))},
	}, opt, engine.WithCatalog(testCatalog(t)))
	_, err := p.AfterPlanning(context.Background(), newPctx(), threeStepPlan(), nil, nil)
	spans := sr.Ended()
	if err == nil || len(spans) != 2 {
		t.Fatalf("err %v, %d spans", err, len(spans))
	}
	if got := spanDecision(spans[0]); got != decision(engine.FailOpen, engine.ActionContinue, engine.ReasonInvalidPlan) ||
		!strings.HasPrefix(spans[0].Status().Description, "plan rule 2 (unknown_agent)") {
		t.Errorf("optional invalid plan span: %+v, %+v", got, spans[0].Status())
	}
	if got := spanDecision(spans[1]); got != decision(engine.FailClosed, engine.ActionTerminate, engine.ReasonHookError) ||
		spans[1].Status().Description != "denied" {
		t.Errorf("required rejection span: %+v, %+v", got, spans[1].Status())
	}
}

// endCounter wraps a tracer provider and counts End calls per span name.
type endCounter struct {
	trace.TracerProvider
	mu   sync.Mutex
	ends map[string]int
}

type countingTracer struct {
	trace.Tracer
	c *endCounter
}

type countingSpan struct {
	trace.Span
	name string
	c    *endCounter
}

func (c *endCounter) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return countingTracer{c.TracerProvider.Tracer(name, opts...), c}
}

func (t countingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, s := t.Tracer.Start(ctx, name, opts...)
	cs := &countingSpan{Span: s, name: name, c: t.c}
	return trace.ContextWithSpan(ctx, cs), cs
}

func (s *countingSpan) End(opts ...trace.SpanEndOption) {
	s.c.mu.Lock()
	s.c.ends[s.name]++
	s.c.mu.Unlock()
	s.Span.End(opts...)
}

func TestPanic_SpanEndsOnce(t *testing.T) {
	for name, tc := range panicCases() {
		t.Run(name, func(t *testing.T) {
			sr := tracetest.NewSpanRecorder()
			counter := &endCounter{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)), ends: map[string]int{}}
			token := &panicToken{label: "span " + name}
			hooks, _ := tc.build(token)
			p := mustNew(t, hooks, engine.WithTracerProvider(counter))
			if got := catchPanic(func() { tc.run(p, engine.NewTrail()) }); got != any(token) {
				t.Fatalf("recovered %v, want the original token", got)
			}
			prefix := "pipeline.hook." + string(tc.stage) + "."
			if want := map[string]int{prefix + "ok": 1, prefix + "bomb": 1}; !reflect.DeepEqual(counter.ends, want) {
				t.Fatalf("End calls = %v, want %v", counter.ends, want)
			}
			spans := sr.Ended()
			bomb := spans[len(spans)-1]
			if got := spanDecision(bomb); got != decision(tc.policy, engine.ActionPropagatePanic, engine.ReasonPanic) {
				t.Fatalf("panic span attributes = %+v", got)
			}
			if bomb.Status().Code != codes.Error || bomb.Status().Description != "pipeline hook panic: span "+name {
				t.Fatalf("panic span status = %+v", bomb.Status())
			}
		})
	}
}

// decisionPoint is one data point of the short-circuit metric.
type decisionPoint struct {
	reason       engine.Reason
	kind, status string
	count        int64
}

func collectDecisions(t *testing.T, reader *sdkmetric.ManualReader) []decisionPoint {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var points []decisionPoint
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != engine.MetricShortCircuitDecision {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok || !sum.IsMonotonic {
				t.Fatalf("%s is %T, want a monotonic int64 counter", m.Name, m.Data)
			}
			for _, dp := range sum.DataPoints {
				var keys []string
				for _, kv := range dp.Attributes.ToSlice() {
					keys = append(keys, string(kv.Key))
				}
				if !reflect.DeepEqual(keys, []string{"kind", "reason", "status"}) {
					t.Fatalf("metric attributes = %v, want exactly kind, reason, status", keys)
				}
				get := func(k attribute.Key) string { v, _ := dp.Attributes.Value(k); return v.AsString() }
				points = append(points, decisionPoint{engine.Reason(get("reason")), get("kind"), get("status"), dp.Value})
			}
		}
	}
	sort.Slice(points, func(i, j int) bool { return points[i].reason < points[j].reason })
	return points
}

func TestTelemetry_ShortCircuitMetric(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	opt := engine.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	vary := map[string]string{"locale": "en"}
	run := func(gate engine.Gate, hooks ...engine.Hook) {
		p := mustNew(t, hooks, opt)
		_, _ = p.BeforePlanning(context.Background(), newPctx(), gate, nil)
	}
	open := engine.NewGate(vary, false)
	run(open, decide("secret-hook-a", nil), decide("secret-hook-b", cacheDecision("x", map[string]string{"locale": "de"})),
		decide("secret-hook-c", cacheDecision("x", vary)))
	run(engine.NewGate(vary, true), decide("secret-hook-d", cacheDecision("x", vary)), decide("secret-hook-e", authoritative("x")))
	run(open, &legacyHook{name: "secret-legacy", fn: func(context.Context, *engine.PipelineContext) (*engine.ShortCircuit, error) {
		return &engine.ShortCircuit{Response: "x", Source: "secret-source"}, nil
	}})
	run(open, decide("secret-hook-f", &engine.ShortCircuitDecision{ShortCircuit: &engine.ShortCircuit{Response: "x"}, Kind: "weird"}))
	run(open, decide("secret-hook-g", &engine.ShortCircuitDecision{Kind: engine.KindCache}))
	run(open, &legacyHook{name: "secret-error", fn: func(context.Context, *engine.PipelineContext) (*engine.ShortCircuit, error) {
		return nil, errors.New("not a decision")
	}})

	want := []decisionPoint{
		{engine.ReasonAuthoritative, "authoritative", "accepted", 2},
		{engine.ReasonCacheMismatch, "cache", "rejected", 1},
		{engine.ReasonCacheMatch, "cache", "accepted", 1},
		{engine.ReasonCacheReadDisabled, "cache", "rejected", 1},
		{engine.ReasonMissingPayload, "cache", "rejected", 1},
		{engine.ReasonUnknownKind, "unknown", "rejected", 1},
	}
	if got := collectDecisions(t, reader); !reflect.DeepEqual(got, want) {
		t.Fatalf("metric points =\n%v\nwant\n%v", got, want)
	}
}

// An accepted short circuit adds the decision event to its hook's span; a rejected
// decision does not.
func TestTelemetry_AcceptedShortCircuitIsASpanEvent(t *testing.T) {
	opt, sr := spanRecorder()
	vary := map[string]string{"locale": "en"}
	p := mustNew(t, []engine.Hook{
		decide("stale-cache", cacheDecision("x", map[string]string{"locale": "de"})),
		decide("fresh-cache", cacheDecision("y", vary)),
	}, opt)
	if _, err := p.BeforePlanning(context.Background(), newPctx(), engine.NewGate(vary, false), nil); err != nil {
		t.Fatal(err)
	}
	events := map[string][]string{}
	for _, s := range sr.Ended() {
		for _, ev := range s.Events() {
			if ev.Name != engine.EventShortCircuitDecision {
				continue
			}
			var attrs []string
			for _, kv := range ev.Attributes {
				attrs = append(attrs, string(kv.Key)+"="+kv.Value.AsString())
			}
			events[s.Name()] = attrs
		}
	}
	want := map[string][]string{"pipeline.hook.before_planning.fresh-cache": {"reason=cache_match", "kind=cache", "status=accepted"}}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("decision events = %v, want %v", events, want)
	}
}

// With a tracer, every invocation record names its span; without one, none does.
func TestTelemetry_InvocationRecordsItsSpan(t *testing.T) {
	opt, sr := spanRecorder()
	hooks := []engine.Hook{&executionHook{name: "audit"}, &executionHook{name: "notify"}}
	trail := engine.NewTrail()
	mustNew(t, hooks, opt).AfterExecution(context.Background(), newPctx(), &engine.ExecutionResult{}, trail)
	spans := sr.Ended()
	invs := trail.Invocations()
	if len(spans) != 2 || len(invs) != 2 {
		t.Fatalf("%d spans, %d invocations, want 2 each", len(spans), len(invs))
	}
	for i, inv := range invs {
		sc := spans[i].SpanContext()
		if inv.TraceID != sc.TraceID().String() || inv.SpanID != sc.SpanID().String() {
			t.Errorf("invocation %s names trace %q span %q, its span is %s/%s", inv.HookName, inv.TraceID, inv.SpanID, sc.TraceID(), sc.SpanID())
		}
	}
	untraced := engine.NewTrail()
	mustNew(t, hooks).AfterExecution(context.Background(), newPctx(), &engine.ExecutionResult{}, untraced)
	for _, inv := range untraced.Invocations() {
		if inv.TraceID != "" || inv.SpanID != "" {
			t.Errorf("untraced invocation %s names trace %q span %q", inv.HookName, inv.TraceID, inv.SpanID)
		}
	}
}
