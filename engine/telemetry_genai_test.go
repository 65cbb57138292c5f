package engine_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// attrs reads a span's string attributes.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

// genAIDriver runs request r through before_planning, after_planning (threeStepPlan),
// an allowed and a denied tool_call check and a failed finish, traced into the
// returned recorder.
func genAIDriver(t *testing.T, payloads bool) *tracetest.SpanRecorder {
	t.Helper()
	ctx := context.Background()
	sr := tracetest.NewSpanRecorder()
	pipeline := mustNew(t, []engine.Hook{&planHook{name: "review"}}, engine.WithCatalog(testCatalog(t)),
		engine.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))), engine.WithSpanPayloads(payloads))
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
	return sr
}

// Stage calls are invoke_agent spans and tool_call checks and finishes execute_tool
// spans with the GenAI attributes, all in the trace RequestSpanContext derives from the
// request id, hook spans nested under their stage call's.
func TestTelemetry_GenAISpans(t *testing.T) {
	spans := genAIDriver(t, false).Ended()
	want := engine.RequestSpanContext("r")
	var agents, tools []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanContext().TraceID() != want.TraceID() {
			t.Errorf("span %q in trace %s, want the request's %s", s.Name(), s.SpanContext().TraceID(), want.TraceID())
		}
		switch s.Name() {
		case "invoke_agent":
			agents = append(agents, s)
		case "execute_tool forecast":
			tools = append(tools, s)
		}
	}
	if len(agents) != 2 || len(tools) != 3 {
		t.Fatalf("%d invoke_agent and %d execute_tool spans of %d, want 2 and 3", len(agents), len(tools), len(spans))
	}
	for i, stage := range []string{"before_planning", "after_planning"} {
		a := attrs(agents[i])
		if a[engine.AttrGenAIOperation] != "invoke_agent" || a[engine.AttrGenAIConversationID] != "r" || a[engine.AttrStage] != stage {
			t.Errorf("invoke_agent span %d: %v", i, a)
		}
		if agents[i].Parent().SpanID() != want.SpanID() {
			t.Errorf("invoke_agent span %d: parent %s, want the request's %s", i, agents[i].Parent().SpanID(), want.SpanID())
		}
	}
	hooks := 0
	for _, s := range spans {
		if s.Name() == "pipeline.hook.after_planning.review" {
			hooks++
			if s.Parent().SpanID() != agents[1].SpanContext().SpanID() {
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
	for _, s := range genAIDriver(t, true).Ended() {
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
