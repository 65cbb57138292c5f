// Package wiretest generates wire values for the tests that check each projection of
// the wire types (engine.View and its consumers) against encoding/json: plans, steps,
// results and operation calls with every optional member present or absent, nil and
// empty slices and maps, nil and set pointers, zero and zoned times, and JSON-shaped
// values nested a few levels deep. Values are drawn from small pools, so that two draws
// often agree on some parts and differ in others. StockStep and StockPlan are the fixed
// stock-agent step and plan the policy tests share.
package wiretest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// Rand returns a deterministic source for seed.
func Rand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// Strings returns nil, an empty slice or a few strings.
func Strings(r *rand.Rand) []string {
	switch r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+r.IntN(2))
	for i := range out {
		out[i] = pick(r, "step-1", "a", "", "{{step-1.response.data.x}}", "é")
	}
	return out
}

// Time returns the zero time, a UTC time or a time in a zone, with or without
// nanoseconds.
func Time(r *rand.Rand) time.Time {
	switch r.IntN(4) {
	case 0:
		return time.Time{}
	case 1:
		return time.Date(2025, 3, 1, 12, 30, 0, 0, time.UTC)
	case 2:
		return time.Date(2025, 3, 1, 12, 30, 0, 500, time.FixedZone("X", 5*3600+1800))
	}
	return time.Date(1999, 12, 31, 23, 59, 59, 123456789, time.UTC)
}

// Value returns a JSON-shaped Go value nested at most depth containers deep: nil,
// booleans, strings, numbers of several Go types, json.Number, []any, map[string]any
// (nil, empty or not), []string and map[string]string.
func Value(r *rand.Rand, depth int) any {
	n := 12
	if depth <= 0 {
		n = 7
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2, 3:
		return pick(r, "x", "", "{{step-1.response.data.price}}", "AAPL", "é€")
	case 4:
		return pick(r, 1.5, 2.0, -3.25, 0.0)
	case 5:
		return pick[any](r, json.Number("1.50"), json.Number("7"), int64(1<<40), 12)
	case 6:
		return Strings(r)
	case 7:
		return pick[any](r, map[string]string(nil), map[string]string{}, map[string]string{"k": "v", "a": "{{step-1.x.y}}"})
	case 8, 9:
		return Object(r, depth-1)
	}
	switch r.IntN(3) {
	case 0:
		return []any(nil)
	case 1:
		return []any{}
	}
	out := make([]any, 1+r.IntN(3))
	for i := range out {
		out[i] = Value(r, depth-1)
	}
	return out
}

// Object returns nil, an empty map or a map of Values nested at most depth deep.
func Object(r *rand.Rand, depth int) map[string]any {
	switch r.IntN(5) {
	case 0:
		return nil
	case 1:
		return map[string]any{}
	}
	out := map[string]any{}
	for range 1 + r.IntN(3) {
		out[pick(r, "capability", "parameters", "a", "b/c", "~x", "")] = Value(r, depth)
	}
	return out
}

// longNames are two names 127 and 128 bytes long, which encodings that prefix a string
// with its length (as a varint) write with one and two length bytes.
var longNames = [2]string{strings.Repeat("n", 127), strings.Repeat("n", 128)}

// Step returns a RoutingStep.
func Step(r *rand.Rand, i int) engine.RoutingStep {
	s := engine.RoutingStep{
		StepID:      pick(r, fmt.Sprintf("step-%d", i+1), ""),
		AgentName:   pick(r, "stock-service", ""),
		Namespace:   pick(r, "demo-tools", "bank", longNames[0], longNames[1]),
		Instruction: pick(r, "", "quote", "buy"),
		DependsOn:   Strings(r),
		Metadata:    Object(r, 3),
	}
	if r.IntN(3) == 0 {
		s.ImplicitDeps = Strings(r)
	}
	return s
}

// Plan returns a RoutingPlan.
func Plan(r *rand.Rand) *engine.RoutingPlan {
	p := &engine.RoutingPlan{
		PlanID: pick(r, "p1", ""), OriginalRequest: pick(r, "buy", ""), Mode: pick(r, engine.PlanMode(""), engine.ModeWorkflow),
		CreatedAt: Time(r), ContinuationNote: pick(r, "", "then"), PhaseNumber: r.IntN(3),
	}
	if r.IntN(2) == 0 {
		p.Terminal = new(r.IntN(2) == 0)
	}
	if r.IntN(3) == 0 {
		p.NeedsUserInput = &engine.NeedsUserInput{Question: pick(r, "", "which?"), MissingFields: Strings(r), PartialProgress: pick(r, "", "half")}
	}
	switch r.IntN(4) {
	case 0:
	case 1:
		p.Steps = []engine.RoutingStep{}
	default:
		for i := range 1 + r.IntN(3) {
			p.Steps = append(p.Steps, Step(r, i))
		}
	}
	return p
}

// StepResult returns a StepResult.
func StepResult(r *rand.Rand, i int) engine.StepResult {
	s := engine.StepResult{
		StepID: fmt.Sprintf("step-%d", i+1), AgentName: pick(r, "a", ""), Capability: pick(r, "quote", ""),
		Namespace: pick(r, "n", ""), Parameters: Object(r, 2), Success: r.IntN(2) == 0,
		Error: pick(r, "", "failed"), Duration: time.Duration(r.IntN(3)) * 1500 * time.Microsecond,
		Attempts: r.IntN(3), Skipped: r.IntN(4) == 0, SkipReason: pick(r, "", "denied"),
	}
	if r.IntN(2) == 0 {
		s.Response = Value(r, 2)
	}
	return s
}

// Result returns an ExecutionResult.
func Result(r *rand.Rand) *engine.ExecutionResult {
	res := &engine.ExecutionResult{PlanID: pick(r, "p1", ""), Success: r.IntN(2) == 0,
		TotalDuration: time.Duration(r.IntN(2)) * time.Second, PhaseCount: r.IntN(3)}
	switch r.IntN(3) {
	case 0:
	case 1:
		res.Steps = []engine.StepResult{}
	default:
		for i := range 1 + r.IntN(3) {
			res.Steps = append(res.Steps, StepResult(r, i))
		}
	}
	return res
}

// Invocations returns a stage's invocations: none, or a few with every optional
// member present or absent, HTML characters and invalid UTF-8 in their strings.
func Invocations(r *rand.Rand) []engine.Invocation {
	if r.IntN(4) == 0 {
		return pick(r, []engine.Invocation(nil), []engine.Invocation{})
	}
	out := make([]engine.Invocation, 1+r.IntN(3))
	for i := range out {
		inv := engine.Invocation{
			HookName: pick(r, "allowed-operations", "<a & b>", "caf\xe9"), Phase: engine.StageAfterPlanning,
			Status: pick(r, engine.InvocationSucceeded, engine.InvocationFailed), Sequence: i + 1, PlanPhase: r.IntN(3),
			StartedAt: Time(r), Duration: time.Duration(r.IntN(1e9)), Error: pick(r, "", "deny: x < y"),
			DecisionID: pick(r, "", "d1"), Mode: pick(r, "", engine.RuleWarn), TraceID: pick(r, "", "t1"), SpanID: pick(r, "", "s1"),
		}
		if r.IntN(2) == 0 {
			inv.Decision = &engine.DecisionRecord{FailurePolicy: engine.FailClosed, Action: engine.ActionContinue,
				Reason: engine.ReasonAccepted, Cause: pick(r, "", engine.CausePolicyDenied)}
		}
		if r.IntN(4) == 0 {
			inv.Effects = []engine.Effect{{EffectID: "e1", Status: engine.EffectPending, Data: json.RawMessage(`{"a":"<b>"}`), StartedAt: Time(r)}}
		}
		if r.IntN(4) == 0 {
			inv.WouldDeny = []engine.Finding{{Mode: engine.RuleWarn, Rule: "r", Violations: []engine.Violation{{Code: "c", Message: "a & b"}}}}
		}
		out[i] = inv
	}
	return out
}

// Call returns an operation call.
func Call(r *rand.Rand) *op.Call {
	return &op.Call{
		Operation: pick(r, op.ToolCall, op.Inference, op.Turn), RequestID: pick(r, "r1", ""),
		StepID: pick(r, "", "step-1"), Namespace: pick(r, "", "demo-tools"), AgentName: pick(r, "", "stock-service"),
		Capability: pick(r, "", "execute_trade"), Parameters: Object(r, 2), Model: pick(r, "", "m"),
		Phase: r.IntN(3), Request: pick(r, "", "buy"), Metadata: Object(r, 2),
	}
}

// JSON is the reference every projection is checked against: v encoded by
// encoding/json and decoded again, numbers kept as written (json.Number).
func JSON(tb testing.TB, v any) any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("json.Marshal: %v", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		tb.Fatalf("decode: %v", err)
	}
	return out
}

// Same fails unless a and b encode to the same JSON.
func Same(tb testing.TB, what string, got, want any) {
	tb.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		tb.Fatalf("%s: json.Marshal: %v", what, err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		tb.Fatalf("%s: json.Marshal: %v", what, err)
	}
	if !bytes.Equal(g, w) {
		tb.Fatalf("%s:\n got  %s\n want %s", what, g, w)
	}
}

// StockStep is a step of the stock agent (demo-tools/stock-service) with capability,
// fixed parameters and the given dependencies.
func StockStep(id, capability string, deps ...string) engine.RoutingStep {
	return engine.RoutingStep{
		StepID:      id,
		AgentName:   "stock-service",
		Namespace:   "demo-tools",
		Instruction: "run " + capability,
		DependsOn:   deps,
		Metadata: map[string]any{
			"capability": capability,
			"parameters": map[string]any{"symbol": "AAPL", "amount": 10},
		},
	}
}

// StockPlan is a first-phase autonomous plan of steps.
func StockPlan(steps ...engine.RoutingStep) *engine.RoutingPlan {
	return &engine.RoutingPlan{
		PlanID:          "plan-1",
		OriginalRequest: "Quote AAPL and buy 10",
		Mode:            engine.ModeAutonomous,
		Steps:           steps,
		CreatedAt:       time.Date(2025, 3, 1, 12, 30, 0, 123456789, time.UTC),
		PhaseNumber:     1,
	}
}

// Filled sets every exported field of the struct *p, and of the structs it reaches, to
// a value that is not zero (strings with HTML characters, one element in each slice
// and map), so that a test comparing an encoder with encoding/json on it fails when a
// field is added that the encoder does not write.
func Filled[T any](p *T) *T {
	fill(reflect.ValueOf(p).Elem(), 0)
	return p
}

func fill(v reflect.Value, depth int) {
	if depth > 4 {
		return
	}
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 12, 2, 1, 2, 3, 4, time.UTC)))
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.SetBytes([]byte(`{"raw":"<&>"}`))
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x<&>")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		v.Set(reflect.ValueOf("any"))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			fill(v.Index(0), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}
