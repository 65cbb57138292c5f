package engine

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine/op"
)

func boundState(params map[string]any, runs map[string]*StepRun) *RequestState {
	return &RequestState{Phase: 1, Runs: runs, PriorSteps: []RoutingStep{
		{StepID: "step-1", Namespace: "ns", AgentName: "agent", Metadata: map[string]any{"capability": "quote"}},
		{StepID: "step-2", Namespace: "ns", AgentName: "agent", DependsOn: []string{"step-1"},
			Metadata: map[string]any{"capability": "trade", "parameters": params}},
	}}
}

func tradeCall(params map[string]any) *op.Call {
	return &op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-2", Namespace: "ns", AgentName: "agent", Capability: "trade", Parameters: params}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBind_Parameters(t *testing.T) {
	known := map[string]*StepRun{"step-1": {Status: RunSucceeded, Attempts: 1, Response: map[string]any{"data": map[string]any{"price": 182.5, "symbol": "ACME"}}}}
	for _, tc := range []struct {
		name, accepted, call string
		runs                 map[string]*StepRun
		want                 string // "" allowed, else the denial code
	}{
		{"equal", `{"amount": 100, "symbol": "ACME"}`, `{"symbol": "ACME", "amount": 100}`, nil, ""},
		{"numbers by value", `{"amount": 100}`, `{"amount": 100.0}`, nil, ""},
		{"nested objects by key", `{"o": {"a": [1, {"b": null}]}}`, `{"o": {"a": [1, {"b": null}]}}`, nil, ""},
		{"changed literal", `{"amount": 100}`, `{"amount": 101}`, nil, CodePlanMismatch},
		{"null is not absent", `{"amount": null}`, `{}`, nil, CodePlanMismatch},
		{"extra key", `{"amount": 100}`, `{"amount": 100, "x": 1}`, nil, CodePlanMismatch},
		{"extra nested key", `{"o": {"a": 1}}`, `{"o": {"a": 1, "b": 2}}`, nil, CodePlanMismatch},
		{"list order", `{"l": [1, 2]}`, `{"l": [2, 1]}`, nil, CodePlanMismatch},
		{"string for number", `{"amount": 100}`, `{"amount": "100"}`, nil, CodePlanMismatch},
		{"unknown reference takes any value", `{"price": "{{step-1.response.data.price}}"}`, `{"price": 17}`, nil, ""},
		{"unresolved reference as sent", `{"price": "{{step-1.response.data.price}}"}`, `{"price": "{{step-1.response.data.price}}"}`, known, ""},
		{"known reference takes its value", `{"price": "{{step-1.response.data.price}}"}`, `{"price": 182.5}`, known, ""},
		{"known reference refuses another", `{"price": "{{step-1.response.data.price}}"}`, `{"price": 1}`, known, CodePlanMismatch},
		{"known reference in text", `{"note": "buy {{step-1.response.data.symbol}} at {{step-1.response.data.price}}"}`, `{"note": "buy ACME at 182.5"}`, known, ""},
		{"known reference in text, other text", `{"note": "buy {{step-1.response.data.symbol}} now"}`, `{"note": "sell ACME now"}`, known, CodePlanMismatch},
		{"unknown reference in text keeps the literal parts", `{"note": "buy {{step-1.response.data.symbol}} now"}`, `{"note": "buy anything now"}`, nil, ""},
		{"unknown reference in text, other literal", `{"note": "buy {{step-1.response.data.symbol}} now"}`, `{"note": "sell anything now"}`, nil, CodePlanMismatch},
		{"regexp characters are literal", `{"note": "a.b {{step-1.response.data.symbol}}"}`, `{"note": "aXb ACME"}`, known, CodePlanMismatch},
		{"reference to a path the response lacks takes any value", `{"v": "{{step-1.response.data.missing}}"}`, `{"v": 3}`, known, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := boundState(decode(t, tc.accepted), tc.runs)
			den := bind(BindingStrict, st, tradeCall(decode(t, tc.call)))
			got := ""
			if den != nil {
				got = den.Code
			}
			if got != tc.want {
				t.Fatalf("bind = %q (%v), want %q", got, den, tc.want)
			}
		})
	}
}

func TestBind_IdentityModeIgnoresParameters(t *testing.T) {
	st := boundState(map[string]any{"amount": 100}, nil)
	if den := bind(BindingIdentity, st, tradeCall(map[string]any{"amount": 1e9})); den != nil {
		t.Fatalf("identity binding compared parameters: %v", den)
	}
	call := tradeCall(map[string]any{"amount": 100})
	call.Capability = "quote"
	if den := bind(BindingIdentity, st, call); den == nil || den.Code != CodePlanMismatch {
		t.Fatalf("identity binding let another capability through: %v", den)
	}
}

func TestBind_RunsDecideRepeats(t *testing.T) {
	for _, tc := range []struct {
		run  *StepRun
		want string
	}{
		{nil, ""},
		{&StepRun{Status: RunStarted, Attempts: 1}, CodeStepAlreadyExecuted},
		{&StepRun{Status: RunSucceeded, Attempts: 1}, CodeStepAlreadyExecuted},
		{&StepRun{Status: RunFailed, Attempts: 1}, CodeStepAlreadyExecuted},
		{&StepRun{Status: RunFailed, Retryable: true, Attempts: 1}, ""},
	} {
		st := boundState(map[string]any{"amount": 1}, map[string]*StepRun{"step-2": tc.run})
		if tc.run == nil {
			st.Runs = nil
		}
		got := ""
		if den := bind(BindingStrict, st, tradeCall(map[string]any{"amount": 1})); den != nil {
			got = den.Code
		}
		if got != tc.want {
			t.Errorf("run %+v: bind = %q, want %q", tc.run, got, tc.want)
		}
	}
}

func TestBind_ReasonsAreValidDenials(t *testing.T) {
	st := boundState(map[string]any{strings.Repeat("k", 900): 1}, nil)
	call := tradeCall(map[string]any{strings.Repeat("k", 900): 2})
	call.StepID = strings.Repeat("é", 400)
	for _, c := range []*op.Call{call, tradeCall(map[string]any{strings.Repeat("k", 900): 2})} {
		den := bind(BindingStrict, st, c)
		if den == nil {
			t.Fatal("no denial")
		}
		if _, err := op.NewDenial(den.Code, den.Reason); err != nil {
			t.Fatalf("binding denial is not a valid denial: %v", err)
		}
	}
}

// The step guards see beside a call is the accepted step's JSON form as encoding/json
// decodes it: members omitted as the encoding omits them, numbers as float64.
func TestStepObject_IsTheStepsDecodedJSON(t *testing.T) {
	for name, step := range map[string]RoutingStep{
		"bare":       {StepID: "step-1"},
		"full":       {StepID: "step-2", AgentName: "a", Namespace: "n", Instruction: "i", DependsOn: []string{"step-1"}, ImplicitDeps: []string{"step-0"}, Metadata: map[string]any{"capability": "c", "parameters": map[string]any{"x": []any{1.0, "y", nil, true}}}},
		"empty":      {StepID: "step-3", DependsOn: []string{}, ImplicitDeps: []string{}, Metadata: map[string]any{}},
		"go values":  {StepID: "step-4", Metadata: map[string]any{"n": 3, "list": []string{"a"}, "nested": map[string]int{"k": 1}}},
		"html chars": {StepID: "step-5", Instruction: "<a&b>", Metadata: map[string]any{"s": "\u2028"}},
	} {
		data, err := json.Marshal(&step)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		if got := stepObject(&step); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: stepObject = %#v, want %#v", name, got, want)
		}
	}
}

// Where parameters differ is named by the first difference in key order: an extra key
// first, then the first key missing or different.
func TestMatchParams_NamesTheFirstDifferenceInKeyOrder(t *testing.T) {
	for _, tc := range []struct{ want, got, where string }{
		{`{"a": 1, "b": {"c": 1}, "z": 1}`, `{"a": 1, "b": {"c": 2}, "z": 2}`, `.b.c (different value)`},
		{`{"a": 1, "b": 1}`, `{"b": 1}`, ` (missing key "a")`},
		{`{"a": 1}`, `{"a": 1, "y": 1, "x": 1}`, ` (extra key "x")`},
		{`{"m": [1, {"k": 1}]}`, `{"m": [1, {"k": "1"}]}`, `.m[1].k (different value)`},
		{`{"a": {"b": 1}, "c": 1}`, `{"a": {"b": 1}, "c": 1}`, ``},
	} {
		if where := matchParams(decode(t, tc.want), decode(t, tc.got), nil); where != tc.where {
			t.Errorf("matchParams(%s, %s) = %q, want %q", tc.want, tc.got, where, tc.where)
		}
	}
}

// A mismatch deep in nested objects is found in one pass: each level compares its
// values once (this test would not finish if every level compared twice).
func TestMatchParams_DeepMismatchIsOnePass(t *testing.T) {
	nest := func(leaf any) map[string]any {
		v := map[string]any{"a": leaf, "b": leaf}
		for range 60 {
			v = map[string]any{"a": v, "b": leaf}
		}
		return v
	}
	if where := matchParams(nest(1.0), nest(2.0), nil); !strings.HasPrefix(where, ".a.a.a") {
		t.Errorf("where = %q", where)
	}
}
