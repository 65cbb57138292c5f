package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// attrs reads a span's string attributes.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.String()
	}
	return m
}

// genAIDriver runs request r through before_planning, after_planning (threeStepPlan),
// an allowed and a denied tool_call check, a failed finish and after_synthesis, each
// call with ctx, traced into the returned recorder by a provider with the engine's
// IDGenerator.
func genAIDriver(t *testing.T, ctx context.Context, payloads bool) *tracetest.SpanRecorder {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr), sdktrace.WithIDGenerator(engine.IDGenerator{}))
	pipeline := mustNew(t, []engine.Hook{&planHook{name: "review"}}, engine.WithCatalog(testCatalog(t)),
		engine.WithTracerProvider(tp), engine.WithSpanPayloads(payloads))
	d, _ := memoryDriver(t, engine.Fixed{Gen: &engine.Generation{ID: "g1", Pipeline: pipeline, Binding: engine.BindingStrict}})
	s, err := d.Open(ctx, "r", engine.Opening{Text: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeforePlanning(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterPlanning(ctx, threeStepPlan(), 0); err != nil {
		t.Fatal(err)
	}
	call := op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-1", Namespace: "tools", AgentName: "weather",
		Capability: "forecast", Parameters: map[string]any{"city": "Oslo", "days": 2.0}}
	if res, err := d.Check(ctx, call); err != nil || !res.Allowed {
		t.Fatalf("check: %+v, %v; want allowed", res, err)
	}
	call.Parameters = map[string]any{"city": "Paris", "days": 2.0}
	if res, err := d.Check(ctx, call); err != nil || res.Allowed {
		t.Fatalf("check: %+v, %v; want denied", res, err)
	}
	if err := d.Finish(ctx, engine.Finish{RequestID: "r", StepID: "step-1", Status: engine.RunFailed, Error: "upstream 502",
		Response: map[string]any{"status": 502.0}, Duration: 40 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	s, err = d.Resume(ctx, engine.StageAfterSynthesis, "r", engine.Opening{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterSynthesis(ctx, "sunny"); err != nil {
		t.Fatal(err)
	}
	return sr
}

// A request is one invoke_agent span, emitted by the call that ends it, with the ids
// RequestSpanContext derives from the request id: the root of the request's trace and
// the parent of its stage calls' spans (pipeline.stage.<stage>) and of its tool_call
// checks' and finishes' execute_tool spans, which carry the GenAI attributes; hook
// spans nest under their stage call's.
func TestTelemetry_GenAISpans(t *testing.T) {
	spans := genAIDriver(t, context.Background(), false).Ended()
	want := engine.RequestSpanContext("r")
	var agents, stages, tools []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanContext().TraceID() != want.TraceID() {
			t.Errorf("span %q in trace %s, want the request's %s", s.Name(), s.SpanContext().TraceID(), want.TraceID())
		}
		switch {
		case s.Name() == "invoke_agent":
			agents = append(agents, s)
		case strings.HasPrefix(s.Name(), "pipeline.stage."):
			stages = append(stages, s)
		case s.Name() == "execute_tool forecast":
			tools = append(tools, s)
		}
		if s.Name() != "invoke_agent" && !strings.HasPrefix(s.Name(), "pipeline.hook.") && s.Parent().SpanID() != want.SpanID() {
			t.Errorf("span %q: parent %s, want the request's %s", s.Name(), s.Parent().SpanID(), want.SpanID())
		}
	}
	if len(agents) != 1 || len(stages) != 3 || len(tools) != 3 {
		t.Fatalf("%d invoke_agent, %d stage and %d execute_tool spans of %d, want 1, 3 and 3", len(agents), len(stages), len(tools), len(spans))
	}
	agent := agents[0]
	if !agent.SpanContext().Equal(trace.NewSpanContext(trace.SpanContextConfig{TraceID: want.TraceID(), SpanID: want.SpanID(), TraceFlags: trace.FlagsSampled})) ||
		agent.Parent().IsValid() {
		t.Errorf("invoke_agent span: %v, parent %v; want the root with the request's ids %v", agent.SpanContext(), agent.Parent(), want)
	}
	if a := attrs(agent); a[engine.AttrGenAIOperation] != "invoke_agent" || a[engine.AttrGenAIConversationID] != "r" ||
		a[engine.AttrLifecycle] != "completed" || a[engine.AttrErrorType] != "" {
		t.Errorf("invoke_agent span: %v", a)
	}
	if last := stages[2]; agent.EndTime().Before(last.EndTime()) || agent.StartTime().After(stages[0].StartTime()) {
		t.Errorf("invoke_agent span %v–%v does not cover its stage calls", agent.StartTime(), agent.EndTime())
	}
	for i, stage := range []string{"before_planning", "after_planning", "after_synthesis"} {
		a := attrs(stages[i])
		if stages[i].Name() != "pipeline.stage."+stage || a[engine.AttrGenAIConversationID] != "r" || a[engine.AttrStage] != stage {
			t.Errorf("stage span %d %q: %v", i, stages[i].Name(), a)
		}
		if len(stages[i].Links()) != 0 {
			t.Errorf("stage span %d links %v without a caller's trace context", i, stages[i].Links())
		}
	}
	hooks := 0
	for _, s := range spans {
		if s.Name() == "pipeline.hook.after_planning.review" {
			hooks++
			if s.Parent().SpanID() != stages[1].SpanContext().SpanID() {
				t.Errorf("hook span %q is not a child of its stage call's span", s.Name())
			}
		}
	}
	if hooks != 1 {
		t.Errorf("%d spans of the review hook, want 1", hooks)
	}
	for i, wantPhase := range []string{"check", "check", "finish"} {
		a := attrs(tools[i])
		if a[engine.AttrGenAIOperation] != "execute_tool" || a[engine.AttrGenAIToolName] != "forecast" ||
			a[engine.AttrGenAIToolCallID] != "step-1" || a[engine.AttrToolPhase] != wantPhase {
			t.Errorf("execute_tool span %d: %v", i, a)
		}
		if _, ok := a[engine.AttrGenAIToolArguments]; ok {
			t.Errorf("execute_tool span %d carries arguments without payloads", i)
		}
		if _, ok := a[engine.AttrGenAIToolResult]; ok {
			t.Errorf("execute_tool span %d carries a result without payloads", i)
		}
	}
	if _, ok := attrs(tools[0])[engine.AttrErrorType]; ok || tools[0].Status().Code == codes.Error {
		t.Errorf("the allowed check's span reports an error: %v", attrs(tools[0]))
	}
	if a := attrs(tools[1]); a[engine.AttrErrorType] != engine.CodePlanMismatch || tools[1].Status().Code != codes.Error {
		t.Errorf("the denied check's span: %v %v, want error.type %s", a, tools[1].Status(), engine.CodePlanMismatch)
	}
	fin := tools[2]
	if a := attrs(fin); a[engine.AttrErrorType] != "tool_failed" || fin.Status().Description != "upstream 502" {
		t.Errorf("the failed finish's span: %v %v", a, fin.Status())
	}
	if d := fin.EndTime().Sub(fin.StartTime()); d != 40*time.Millisecond {
		t.Errorf("the finish's span lasts %v, want the reported 40ms", d)
	}
}

// With payloads on, execute_tool spans carry the call's arguments and the finish's
// result as JSON.
func TestTelemetry_GenAIPayloadsOptIn(t *testing.T) {
	var args, results []string
	for _, s := range genAIDriver(t, context.Background(), true).Ended() {
		a := attrs(s)
		if v, ok := a[engine.AttrGenAIToolArguments]; ok {
			args = append(args, v)
		}
		if v, ok := a[engine.AttrGenAIToolResult]; ok {
			results = append(results, v)
		}
	}
	if len(args) != 2 || args[0] != `{"city":"Oslo","days":2}` || args[1] != `{"city":"Paris","days":2}` {
		t.Errorf("arguments = %q", args)
	}
	if len(results) != 1 || results[0] != `{"status":502}` {
		t.Errorf("results = %q", results)
	}
}

// The request's span context is the same for the same id and differs between ids.
func TestRequestSpanContext_DerivedFromTheID(t *testing.T) {
	a, b := engine.RequestSpanContext("r1"), engine.RequestSpanContext("r2")
	if !a.IsValid() || !a.IsSampled() || !a.IsRemote() || !a.Equal(engine.RequestSpanContext("r1")) {
		t.Errorf("span context of r1 = %+v", a)
	}
	if a.TraceID() == b.TraceID() || a.SpanID() == b.SpanID() {
		t.Errorf("r1 and r2 share a trace or span id: %v %v", a, b)
	}
}

// Calls that carry the caller's trace context put the request's spans in the caller's
// trace: the invoke_agent span, with the span id derived from the request id, is a
// child of the span of the call that ended the request, and every stage call's span a
// child of it, linked to its own caller's span.
func TestTelemetry_CallerTraceContext(t *testing.T) {
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0x00, 0xf0, 2},
		TraceFlags: trace.FlagsSampled, Remote: true})
	spans := genAIDriver(t, trace.ContextWithRemoteSpanContext(context.Background(), caller), false).Ended()
	request := engine.RequestSpanContext("r").SpanID()
	agents := 0
	for _, s := range spans {
		if s.SpanContext().TraceID() != caller.TraceID() {
			t.Errorf("span %q in trace %s, want the caller's %s", s.Name(), s.SpanContext().TraceID(), caller.TraceID())
		}
		switch {
		case s.Name() == "invoke_agent":
			agents++
			if s.SpanContext().SpanID() != request || s.Parent().SpanID() != caller.SpanID() {
				t.Errorf("invoke_agent span %v, parent %v; want span id %s under the caller's %s", s.SpanContext(), s.Parent(), request, caller.SpanID())
			}
		case strings.HasPrefix(s.Name(), "pipeline.stage."), strings.HasPrefix(s.Name(), "execute_tool "):
			if s.Parent().SpanID() != request {
				t.Errorf("span %q: parent %s, want the request's %s", s.Name(), s.Parent().SpanID(), request)
			}
			if l := s.Links(); len(l) != 1 || !l[0].SpanContext.Equal(caller) {
				t.Errorf("span %q links %v, want the caller's span", s.Name(), l)
			}
		}
	}
	if agents != 1 {
		t.Errorf("%d invoke_agent spans, want 1", agents)
	}
}

// A request the required review fails ends with its call: its invoke_agent span says
// failed, with the cause as error.type.
func TestTelemetry_FailedRequestSpan(t *testing.T) {
	ctx := context.Background()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr), sdktrace.WithIDGenerator(engine.IDGenerator{}))
	review := &requiredHook{planHook{name: "review", fn: func(context.Context, *engine.PipelineContext, *engine.RoutingPlan) (*engine.RoutingPlan, error) {
		return nil, errors.New("not today")
	}}}
	pipeline := mustNew(t, []engine.Hook{review}, engine.WithCatalog(testCatalog(t)), engine.WithTracerProvider(tp))
	d, _ := memoryDriver(t, engine.Fixed{Gen: &engine.Generation{ID: "g1", Pipeline: pipeline}})
	s, err := d.Open(ctx, "f", engine.Opening{Text: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	_, rejected := s.AfterPlanning(ctx, threeStepPlan(), 0)
	if rejected == nil || engine.CauseOf(rejected) == "" {
		t.Fatalf("after_planning = %v, want a rejection with a cause", rejected)
	}
	var agents []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == "invoke_agent" {
			agents = append(agents, s)
		}
	}
	if len(agents) != 1 {
		t.Fatalf("%d invoke_agent spans, want 1", len(agents))
	}
	if a := attrs(agents[0]); a[engine.AttrLifecycle] != "failed" || a[engine.AttrErrorType] != string(engine.CauseOf(rejected)) || agents[0].Status().Code != codes.Error {
		t.Errorf("invoke_agent span of a failed request: %v %v", a, agents[0].Status())
	}
}

// A request failed by its caller (Session.Fail) ends with that call: one invoke_agent
// span, failed, under the failing call's trace context.
func TestTelemetry_FailEmitsTheRequestSpan(t *testing.T) {
	ctx := context.Background()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr), sdktrace.WithIDGenerator(engine.IDGenerator{}))
	pipeline := mustNew(t, nil, engine.WithTracerProvider(tp))
	d, _ := memoryDriver(t, engine.Fixed{Gen: &engine.Generation{ID: "g1", Pipeline: pipeline}})
	s, err := d.Open(ctx, "p", engine.Opening{Text: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeforePlanning(ctx); err != nil {
		t.Fatal(err)
	}
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{8}, TraceFlags: trace.FlagsSampled, Remote: true})
	if err := s.Fail(trace.ContextWithRemoteSpanContext(ctx, caller), errors.New("the planner crashed")); err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(ctx, errors.New("again")); err != nil { // the request is over: no second span
		t.Fatal(err)
	}
	var agents []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == "invoke_agent" {
			agents = append(agents, s)
		}
	}
	if len(agents) != 1 {
		t.Fatalf("%d invoke_agent spans, want 1", len(agents))
	}
	a := agents[0]
	if attrs(a)[engine.AttrLifecycle] != "failed" || a.Status().Description != "the planner crashed" ||
		a.Parent().SpanID() != caller.SpanID() || a.SpanContext().SpanID() != engine.RequestSpanContext("p").SpanID() {
		t.Errorf("invoke_agent span: %v %v, parent %v", attrs(a), a.Status(), a.Parent())
	}
}

// The call that opens a request names its trace: a later call without trace context
// of its own is in it too (the state keeps the opener's traceparent), unlinked, and the
// request's invoke_agent span is a child of the opener's span.
func TestTelemetry_OpenerTraceContextKept(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr), sdktrace.WithIDGenerator(engine.IDGenerator{}))
	pipeline := mustNew(t, nil, engine.WithTracerProvider(tp))
	d, _ := memoryDriver(t, engine.Fixed{Gen: &engine.Generation{ID: "g1", Pipeline: pipeline}})
	opener := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9, 9}, SpanID: trace.SpanID{3}, TraceFlags: trace.FlagsSampled, Remote: true})
	s, err := d.Open(trace.ContextWithRemoteSpanContext(context.Background(), opener), "o", engine.Opening{Text: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeforePlanning(trace.ContextWithRemoteSpanContext(context.Background(), opener)); err != nil {
		t.Fatal(err)
	}
	s, err = d.Resume(context.Background(), engine.StageAfterSynthesis, "o", engine.Opening{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterSynthesis(context.Background(), "sunny"); err != nil {
		t.Fatal(err)
	}
	request := engine.RequestSpanContext("o").SpanID()
	seen := map[string]bool{}
	for _, s := range sr.Ended() {
		seen[s.Name()] = true
		if s.SpanContext().TraceID() != opener.TraceID() {
			t.Errorf("span %q in trace %s, want the opener's %s", s.Name(), s.SpanContext().TraceID(), opener.TraceID())
		}
		switch s.Name() {
		case "invoke_agent":
			if s.Parent().SpanID() != opener.SpanID() || s.SpanContext().SpanID() != request {
				t.Errorf("invoke_agent span %v under %v, want %s under the opener's span", s.SpanContext(), s.Parent(), request)
			}
		case "pipeline.stage.after_synthesis":
			if s.Parent().SpanID() != request || len(s.Links()) != 0 {
				t.Errorf("after_synthesis span under %v, links %v; want under the request's span, unlinked", s.Parent(), s.Links())
			}
		}
	}
	if !seen["invoke_agent"] || !seen["pipeline.stage.after_synthesis"] {
		t.Errorf("spans %v", seen)
	}
}
