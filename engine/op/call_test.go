package op_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentd-dev/agentd/engine/op"
)

func TestCall_Validate(t *testing.T) {
	deep := map[string]any{}
	for m, i := deep, 0; i < 40; i++ {
		next := map[string]any{}
		m["n"] = next
		m = next
	}
	cyclic := []any{nil}
	cyclic[0] = cyclic
	with := func(edit func(*op.Call)) op.Call {
		c := toolCall()
		edit(&c)
		return c
	}
	cases := []struct {
		name  string
		call  op.Call
		field string // "" means valid
	}{
		{"tool_call", toolCall(), ""},
		{"turn", op.Call{Operation: op.Turn, RequestID: "r"}, ""},
		{"inference", op.Call{Operation: op.Inference, RequestID: "r", Model: "m"}, ""},
		{"planning", op.Call{Operation: op.Planning, RequestID: "r", Phase: 2}, ""},
		{"synthesis", op.Call{Operation: op.Synthesis, RequestID: "r"}, ""},
		{"nested_values", with(func(c *op.Call) {
			c.Parameters = map[string]any{"a": []any{map[string]any{"b": "ü"}}, "s": []string{"x"}}
		}), ""},
		{"unknown_operation", op.Call{Operation: "shell", RequestID: "r"}, "operation"},
		{"empty_operation", op.Call{RequestID: "r"}, "operation"},
		{"empty_request_id", op.Call{Operation: op.Turn}, "request_id"},
		{"tool_call_without_step_id", with(func(c *op.Call) { c.StepID = "" }), "step_id"},
		{"tool_call_without_agent_name", with(func(c *op.Call) { c.AgentName = "" }), "agent_name"},
		{"tool_call_without_capability", with(func(c *op.Call) { c.Capability = "" }), "capability"},
		{"inference_without_model", op.Call{Operation: op.Inference, RequestID: "r"}, "model"},
		{"negative_phase", op.Call{Operation: op.Turn, RequestID: "r", Phase: -1}, "phase"},
		{"bad_utf8_request_id", op.Call{Operation: op.Turn, RequestID: "r\xff"}, "request_id"},
		{"bad_utf8_request", op.Call{Operation: op.Turn, RequestID: "r", Request: "\xc3"}, "request"},
		{"bad_utf8_namespace", with(func(c *op.Call) { c.Namespace = "\xff" }), "namespace"},
		{"bad_utf8_nested_value", with(func(c *op.Call) {
			c.Parameters = map[string]any{"order": map[string]any{"items": []any{"ok", "\xff"}}}
		}), "parameters.order.items[1]"},
		{"bad_utf8_metadata_key", with(func(c *op.Call) { c.Metadata = map[string]any{"\xff": 1} }), "metadata"},
		{"bad_utf8_string_map", with(func(c *op.Call) {
			c.Metadata = map[string]any{"labels": map[string]string{"k": "\xff"}}
		}), "metadata.labels.k"},
		{"too_deep", with(func(c *op.Call) { c.Parameters = deep }), "parameters" + repeat(".n", op.MaxDepth)},
		{"cyclic_slice", with(func(c *op.Call) { c.Parameters = map[string]any{"c": cyclic} }), "parameters.c" + repeat("[0]", op.MaxDepth-1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var ce *op.CallError
			if !errors.As(err, &ce) || ce.Field != tc.field || ce.Reason == "" {
				t.Fatalf("err = %v, want *CallError on %s", err, tc.field)
			}
		})
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func TestCall_CloneIsDeep(t *testing.T) {
	c := toolCall()
	c.Parameters = map[string]any{
		"order":  map[string]any{"qty": 1.0, "legs": []any{map[string]any{"px": 2.0}}},
		"tags":   []string{"a"},
		"labels": map[string]string{"k": "v"},
		"rows":   []map[string]any{{"x": 1.0}},
		"raw":    []byte("x"),
	}
	c.Metadata = map[string]any{"empty": map[string]any{}}
	want := c.Clone()
	cp := c.Clone()
	cp.Parameters["order"].(map[string]any)["legs"].([]any)[0].(map[string]any)["px"] = 9.0
	cp.Parameters["tags"].([]string)[0] = "z"
	cp.Parameters["labels"].(map[string]string)["k"] = "z"
	cp.Parameters["rows"].([]map[string]any)[0]["x"] = 9.0
	cp.Parameters["raw"].([]byte)[0] = 'z'
	cp.Metadata["empty"].(map[string]any)["new"] = true
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("mutating a clone changed the original: %+v", c)
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	if got := (op.Call{Parameters: cyclic}).Clone(); got.Parameters["self"] == nil {
		t.Fatal("a cyclic map must clone to the depth bound and stop")
	}
	if (op.Call{}).Clone().Parameters != nil {
		t.Fatal("a nil map must stay nil")
	}
}

func TestCall_CloneWithoutMapsDoesNotAllocate(t *testing.T) {
	c := toolCall()
	if n := testing.AllocsPerRun(100, func() { _ = c.Clone() }); n != 0 {
		t.Fatalf("Clone allocated %v times", n)
	}
}

func TestCall_JSONFieldNames(t *testing.T) {
	c := op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "s", Namespace: "n", AgentName: "a",
		Capability: "c", Parameters: map[string]any{"p": 1.0}, Model: "m", Phase: 2, Request: "q",
		Metadata: map[string]any{"k": "v"}}
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"operation", "request_id", "step_id", "namespace", "agent_name",
		"capability", "parameters", "model", "phase", "request", "metadata"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("missing JSON field %q in %s", k, raw)
		}
	}
	raw, _ = json.Marshal(op.Call{Operation: op.Turn, RequestID: "r"})
	if string(raw) != `{"operation":"turn","request_id":"r"}` {
		t.Errorf("empty optional fields not omitted: %s", raw)
	}
}

func FuzzCallValidate(f *testing.F) {
	for _, seed := range []string{
		`{"operation":"tool_call","request_id":"r","step_id":"s","agent_name":"a","capability":"c","parameters":{"q":[1,{"x":"y"}]}}`,
		`{"operation":"inference","request_id":"r","model":"m","metadata":{"k":{"n":null}}}`,
		`{"operation":"turn","request_id":"","phase":-3}`,
		`{"operation":"planning","request_id":"\udc00","request":"\u0000"}`,
		`{"operation":"shell"}`,
		`{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c op.Call
		if json.Unmarshal(data, &c) != nil {
			return
		}
		err := c.Validate()
		if err != nil {
			var ce *op.CallError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate returned %T, want *CallError", err)
			}
		}
		cp := c.Clone()
		if !reflect.DeepEqual(cp, c) {
			t.Fatalf("Clone changed the call: %+v vs %+v", cp, c)
		}
	})
}
