package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

func TestDataCache_AnswersBelowACachedValue(t *testing.T) {
	c := newDataCache(maxDataCacheNodes)
	c.Put(ast.MustParseRef("data.x"), ast.MustParseTerm(`{"a": {"b": 1}, "l": [10, 20]}`).Value)
	tests := []struct {
		ref  string
		want string // "" for nil
	}{
		{"data.x.a.b", "1"},
		{"data.x.a", `{"b": 1}`},
		{"data.x.l[1]", "20"},
		{"data.x.c", ""},
		{"data.x.a.b.c", ""},
		{"data.y", ""},
		{"data", ""},
	}
	for _, tt := range tests {
		got := c.Get(ast.MustParseRef(tt.ref))
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("Get(%s) = %v, want nil", tt.ref, got)
		case tt.want != "" && (got == nil || got.Compare(ast.MustParseTerm(tt.want).Value) != 0):
			t.Errorf("Get(%s) = %v, want %s", tt.ref, got, tt.want)
		}
	}
	// A value cached above replaces what was cached below it.
	c = newDataCache(maxDataCacheNodes)
	c.Put(ast.MustParseRef("data.x.a"), ast.MustParseTerm(`{"b": 2}`).Value)
	c.Put(ast.MustParseRef("data.x"), ast.MustParseTerm(`{"a": {"b": 1}}`).Value)
	if got := c.Get(ast.MustParseRef("data.x.a.b")); got == nil || got.Compare(ast.Number("1")) != 0 {
		t.Errorf("after a Put above, Get(data.x.a.b) = %v, want 1", got)
	}
}

func TestDataCache_StopsGrowingWhenFull(t *testing.T) {
	c := newDataCache(3)
	c.Put(ast.MustParseRef("data.x.a"), ast.Number("1")) // data, x, a: full
	c.Put(ast.MustParseRef("data.x.b"), ast.Number("2"))
	if got := c.Get(ast.MustParseRef("data.x.b")); got != nil {
		t.Errorf("a full cache kept data.x.b = %v", got)
	}
	if got := c.Get(ast.MustParseRef("data.x.a")); got == nil || got.Compare(ast.Number("1")) != 0 {
		t.Errorf("a full cache lost data.x.a: %v", got)
	}
	c.Put(ast.MustParseRef("data.x.a"), ast.Number("3")) // no new node: still kept
	if got := c.Get(ast.MustParseRef("data.x.a")); got == nil || got.Compare(ast.Number("3")) != 0 {
		t.Errorf("a full cache did not update data.x.a: %v", got)
	}
}

// A reference below a cached value adds no node: the value answers it, however the
// input spells the key below (data.l[1], data.l[1.0], ...).
func TestDataCache_AddsNothingBelowACachedValue(t *testing.T) {
	c := newDataCache(3)
	c.Put(ast.MustParseRef("data.x"), ast.MustParseTerm(`[10, 20]`).Value) // data, x
	for _, ref := range []string{"data.x[1]", "data.x[1.0]", "data.x[1.00]"} {
		c.Put(ast.MustParseRef(ref), ast.Number("20"))
	}
	c.Put(ast.MustParseRef("data.y"), ast.Number("1")) // the third node
	if got := c.Get(ast.MustParseRef("data.y")); got == nil {
		t.Error("Puts below data.x used up the nodes data.y needed")
	}
}

// Evaluations that share the bundle's data cache decide as OPA's own evaluations, each
// with a cache of its own, do: on data read whole, in part, by keys the input chooses
// (present, absent, numbers spelled two ways), by iteration, and under `with`
// replacements of data, evaluated in an order where one evaluation's reads are cached
// before the next ones.
func TestDataCache_EvaluationsAgreeWithOPA(t *testing.T) {
	const module = `package t

allowed(ns, cap) if data.x.allowed[ns][cap]

deny contains k if {
	some k in input.keys
	not allowed(k, input.cap)
}

deny contains "index" if data.x.list[input.i] != input.v

deny contains "whole" if count(data.x.allowed) != 2

deny contains "with" if {
	input.with
	allowed("b", "c") with data.x.allowed.b as {"c": true}
}

deny contains "overridden" if {
	input.with
	not allowed("a", "read") with data.x.allowed as {}
}

deny contains sprintf("iterated %s", [k]) if {
	some k, caps in data.x.allowed
	caps[input.cap]
	input.iterate
}
`
	data := map[string]any{"allowed": map[string]any{"a": map[string]any{"read": true}, "z": map[string]any{"write": true}}, "list": []any{"p", "q"}}
	b, err := Compile([]Module{{File: "t.rego", Source: []byte(module)}}, []DataFile{{File: "x.json", Path: []string{"x"}, Value: data}}, Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q := mustPrepare(t, b, "data.t.deny")
	raw, err := rego.New(rego.Query("data.t.deny"), rego.Module("t.rego", module),
		rego.Store(inmem.NewFromObject(map[string]any{"x": data}))).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	inputs := []string{
		`{"keys": ["a"], "cap": "read", "i": 0, "v": "p"}`,
		`{"keys": ["a", "b", "z"], "cap": "write", "i": 1, "v": "q"}`,
		`{"keys": ["a"], "cap": "read", "i": 1.0, "v": "q", "with": true}`,
		`{"keys": ["b"], "cap": "c", "i": 2, "v": "r", "with": true}`,
		`{"keys": [], "cap": "read", "i": 0, "v": "q", "iterate": true}`,
		`{"keys": ["a"], "cap": "read", "i": 0, "v": "p"}`,
	}
	for round := range 2 { // the second round finds everything cached
		for _, in := range inputs {
			var x any
			if err := json.Unmarshal([]byte(in), &x); err != nil {
				t.Fatal(err)
			}
			value, err := ast.InterfaceToValue(x)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := q.eval(context.Background(), value)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := raw.Eval(context.Background(), rego.EvalInput(x))
			if err != nil || len(rs) != 1 {
				t.Fatalf("raw OPA: %v, %v", rs, err)
			}
			if g, w := fmt.Sprint(got), fmt.Sprint(rs[0].Expressions[0].Value); g != w {
				t.Errorf("round %d, input %s: deny = %s, OPA's own evaluation: %s", round, in, g, w)
			}
		}
	}
}
