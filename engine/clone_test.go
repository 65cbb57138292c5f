package engine_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/wiretest"
)

// richPlan exercises every field ClonePlan must copy deeply.
func richPlan() *engine.RoutingPlan {
	plan := threeStepPlan()
	plan.Terminal = new(bool)
	plan.NeedsUserInput = &engine.NeedsUserInput{Question: "q", MissingFields: []string{"city"}, PartialProgress: "half"}
	plan.Steps[0].ImplicitDeps = []string{"step-0"}
	plan.Steps[0].Metadata["parameters"] = map[string]any{
		"nested": map[string]any{"list": []any{map[string]any{"k": "v"}, float64(1), nil, true}},
		"tags":   []string{"a", "b"},
		"labels": map[string]string{"x": "y"},
		"raw":    json.RawMessage(`{"r":1}`),
		"number": json.Number("12.5"),
		"when":   time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		"ints":   []any{int64(1), uint8(2), float32(3)},
	}
	return plan
}

func TestClonePlan_SharesNoMutableMemory(t *testing.T) {
	original := richPlan()
	pristine := richPlan()
	c := mustClone(t, original)
	if !reflect.DeepEqual(c, original) {
		t.Fatalf("clone differs from the original")
	}
	params := c.Steps[0].Parameters()
	params["nested"].(map[string]any)["list"].([]any)[0].(map[string]any)["k"] = "changed"
	params["tags"].([]string)[0] = "changed"
	params["labels"].(map[string]string)["x"] = "changed"
	params["raw"].(json.RawMessage)[2] = 'X'
	params["new"] = 1
	c.Steps[0].ImplicitDeps[0] = "changed"
	c.Steps[1].DependsOn[0] = "changed"
	c.Steps[0].Metadata["capability"] = "changed"
	*c.Terminal = true
	c.NeedsUserInput.MissingFields[0] = "changed"
	c.NeedsUserInput.Question = "changed"
	c.Steps[2] = engine.RoutingStep{}
	if !reflect.DeepEqual(original, pristine) {
		t.Fatalf("mutating the clone changed the original")
	}
}

func TestClonePlan_NilAndEmpty(t *testing.T) {
	if c, err := engine.ClonePlan(nil); c != nil || err != nil {
		t.Fatalf("ClonePlan(nil) = %v, %v", c, err)
	}
	empty := &engine.RoutingPlan{PlanID: "p"}
	c := mustClone(t, empty)
	if c == empty || !reflect.DeepEqual(c, empty) || c.Steps != nil || c.Terminal != nil || c.NeedsUserInput != nil {
		t.Fatalf("clone of an empty plan = %+v", c)
	}
}

func TestClonePlan_UnsupportedValueFails(t *testing.T) {
	type custom struct{ X int }
	cases := map[string]struct {
		value any
		path  string
		typ   string
	}{
		"channel":        {make(chan int), "steps[1].metadata.parameters.v", "chan int"},
		"struct":         {custom{1}, "steps[1].metadata.parameters.v", "engine_test.custom"},
		"pointer":        {new(int), "steps[1].metadata.parameters.v", "*int"},
		"nested in list": {[]any{"ok", func() {}}, "steps[1].metadata.parameters.v[1]", "func()"},
		"typed map":      {map[string]int{"a": 1}, "steps[1].metadata.parameters.v", "map[string]int"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := threeStepPlan()
			plan.Steps[1].Parameters()["v"] = tc.value
			c, err := engine.ClonePlan(plan)
			var ce *engine.CloneError
			if c != nil || !errors.As(err, &ce) {
				t.Fatalf("ClonePlan = %v, %v; want a *CloneError", c, err)
			}
			if ce.Path != tc.path || ce.Type != tc.typ {
				t.Fatalf("CloneError = {%q, %q}, want {%q, %q}", ce.Path, ce.Type, tc.path, tc.typ)
			}
		})
	}
}

func TestCloneValue_JSONShapes(t *testing.T) {
	v := map[string]any{"a": []any{"x", map[string]any{"b": nil}}}
	c, err := engine.CloneValue(v)
	if err != nil || !reflect.DeepEqual(c, v) {
		t.Fatalf("CloneValue = %v, %v", c, err)
	}
	c.(map[string]any)["a"].([]any)[1].(map[string]any)["b"] = 1
	if v["a"].([]any)[1].(map[string]any)["b"] != nil {
		t.Fatalf("CloneValue shares nested maps")
	}
	if _, err := engine.CloneValue(struct{}{}); err == nil {
		t.Fatalf("CloneValue accepted a struct")
	}
}

// references records, by address, every map, non-empty slice and pointer target
// reachable from v: the mutable memory a deep copy must not share. A time's location is
// immutable.
func references(v reflect.Value, path string, out map[uintptr]string) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			out[v.Pointer()] = path
			references(v.Elem(), path, out)
		}
	case reflect.Interface:
		if !v.IsNil() {
			references(v.Elem(), path, out)
		}
	case reflect.Map:
		if !v.IsNil() {
			out[v.Pointer()] = path
			for it := v.MapRange(); it.Next(); {
				references(it.Value(), path+"."+it.Key().String(), out)
			}
		}
	case reflect.Slice:
		if v.Len() > 0 {
			out[v.Pointer()] = path
			for i := range v.Len() {
				references(v.Index(i), path+"["+strconv.Itoa(i)+"]", out)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			references(v.Field(i), path+"."+v.Type().Field(i).Name, out)
		}
	}
}

// sharesNoMemory fails when a and b reach the same map, slice or pointer target.
func sharesNoMemory(t *testing.T, a, b any) {
	t.Helper()
	ra, rb := map[uintptr]string{}, map[uintptr]string{}
	references(reflect.ValueOf(a), "", ra)
	references(reflect.ValueOf(b), "", rb)
	for p, path := range ra {
		if other, ok := rb[p]; ok {
			t.Fatalf("the copy shares %s with the original's %s", path, other)
		}
	}
}

// TestClone_AgreesWithJSON: copies of generated plans encode to the same JSON as the
// original, are equal to it (nil and empty kept apart) and share no mutable memory with
// it.
func TestClone_AgreesWithJSON(t *testing.T) {
	r := wiretest.Rand(2)
	for range 1000 {
		p := wiretest.Plan(r)
		c := mustClone(t, p)
		wiretest.Same(t, "plan copy", wiretest.JSON(t, c), wiretest.JSON(t, p))
		if !reflect.DeepEqual(c, p) {
			t.Fatalf("plan copy differs from the original")
		}
		sharesNoMemory(t, c, p)
	}
}

// TestCopyRecord_OwnsItsEntries: a record's copy encodes and compares equal to the
// original, and every change CopyRecord's contract allows on the copy (a field, an
// entry replaced, an entry appended, in each entry slice) leaves the original as it was.
func TestCopyRecord_OwnsItsEntries(t *testing.T) {
	r := wiretest.Rand(3)
	for range 200 {
		until := time.Unix(1, 0)
		rec := &engine.ExecutionRecord{RequestID: "r", Result: wiretest.Result(r), OpenUntil: &until,
			PipelineHooks: []engine.Invocation{{HookName: "h", Effects: []engine.Effect{{EffectID: "e"}}}},
			Phases:        []engine.PhaseRecord{{Phase: 1, Plan: wiretest.Plan(r), Results: wiretest.Result(r).Steps}},
			Rejections:    []engine.PlanRejection{{Phase: 1, Plan: wiretest.Plan(r)}},
			Operations:    []engine.OperationRecord{{StepID: "s"}}}
		before := wiretest.JSON(t, rec)
		c := engine.CopyRecord(rec)
		wiretest.Same(t, "record copy", wiretest.JSON(t, c), before)
		if !reflect.DeepEqual(c, rec) {
			t.Fatalf("record copy differs from the original")
		}
		*c.OpenUntil = time.Unix(2, 0)
		c.PipelineHooks[0] = engine.Invocation{HookName: "other"}
		c.PipelineHooks = append(c.PipelineHooks, engine.Invocation{})
		c.Phases[0].Results = nil
		c.Phases = append(c.Phases, engine.PhaseRecord{})
		c.Rejections[0].Plan = nil
		c.Rejections = append(c.Rejections, engine.PlanRejection{})
		c.Operations[0].Finish = &engine.FinishRecord{Status: engine.RunSucceeded}
		c.Operations = append(c.Operations, engine.OperationRecord{})
		c.Result.Steps = append(c.Result.Steps, engine.StepResult{StepID: "x"})
		c.Result.Steps[0].StepID = "changed"
		wiretest.Same(t, "the original after its copy changed", wiretest.JSON(t, rec), before)
	}
}
