package reads_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/wiretest"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/policy"
	"github.com/agentd-dev/agentd/engine/policy/reads"
)

// readCases are policies over a plan-review input (queried as data.p, so only its deny
// and plan members are evaluated), each with the input paths its decisions may depend
// on (PlanMemo.Reads). Every one is also run by the differential
// test below, which is what proves the paths sufficient.
var readCases = []struct {
	name, src string
	want      []string
	query     string // default data.p
}{
	{
		name: "member by name",
		src:  `deny contains "x" if { some s in input.plan.steps; s.namespace == "bank" }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].namespace="},
	},
	{
		name: "member compared with another input value",
		src:  `deny contains "x" if { some s in input.plan.steps; s.namespace == s.agent_name }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].agent_name.**", "input.plan.steps[*].namespace.**"},
	},
	{
		name: "object.get and a function with a constant argument",
		src: `f(s, k) := object.get(s, k, "")
deny contains "x" if { some s in input.plan.steps; f(s, "instruction") == "rm -rf" }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].instruction="},
	},
	{
		name: "a step iterated as an object",
		src:  `deny contains k if { some s in input.plan.steps; some k, v in s; v == "rm -rf" }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*][*]="},
	},
	{
		name: "a step passed to a built-in",
		src:  `deny contains json.marshal(s) if { some s in input.plan.steps; s.namespace == "bank" }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*].**"},
	},
	{
		name: "type tests and count",
		src:  `deny contains "x" if { is_array(input.plan.steps); count(input.plan.steps[_].metadata) > 1 }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].metadata#"},
	},
	{
		name: "a rule aliasing the input, and a comprehension",
		src: `texts := [s.instruction | some s in input.plan.steps]
deny contains "repeated" if count(texts) != count({t | some t in texts})`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].instruction.**"},
	},
	{
		name: "a rule decisions do not read, which would fail, is not evaluated",
		src: `n := to_number(input.plan.steps[0].instruction)
deny := []`,
		want: []string{"input"},
	},
	{
		name: "a consumed rule returning the plan",
		src: `plan := input.plan
deny := []`,
		want: []string{"input", "input.plan.**"},
	},
	{
		name: "a rule decisions do not read, returning the plan",
		src: `copy := input.plan
deny := []`,
		want: []string{"input"},
	},
	{
		name: "every",
		src: `short if every s in input.plan.steps { count(s.instruction) < 12 }
deny contains "long" if not short`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].instruction#"},
	},
	{
		name: "with input",
		src: `deny contains "x" if { data.p.q with input as {} }
q if input.plan`,
		want: []string{"input.**"},
	},
	{
		name: "with a built-in replaced",
		src: `deny contains "x" if { count(input.plan.steps) > 1 with count as long }
long(xs) := n if n := count([s | some s in xs; s.instruction != "hi"])`,
		want: []string{"input.**"},
	},
	{
		name: "a rule with a variable in its head",
		src: `by_mode[m].needs := input.plan.needs_user_input if m := "x"
deny contains "x" if data.p.by_mode.x.needs.question == "which?"`,
		want: []string{"input", "input.plan", "input.plan.needs_user_input.**"},
	},
	{
		name: "a rule with several solutions, compared for conflicts",
		src: `r := m if { some s in input.plan.steps; m := s.metadata }
deny contains "d" if not is_object(r)`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].metadata.**"},
	},
	{
		name: "a function with several solutions, compared for conflicts",
		src: `f(xs) := m if { some s in xs; m := s.metadata }
deny contains "d" if is_object(f(input.plan.steps))`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].metadata.**"},
	},
	{
		name: "a variable in a rule's head reference is a key",
		src: `seen[m].first := true if { some s in input.plan.steps; m := s.metadata }
deny contains "duplicate metadata" if count(seen) != count(input.plan.steps)`,
		want: []string{"input", "input.plan", "input.plan.steps#", "input.plan.steps[*]", "input.plan.steps[*].metadata.**"},
	},
	{
		name: "a partial object indexed by input",
		src: `allowed_meta[m] := true if some m in [{"capability": "quote"}]
deny contains "not allowed" if { some s in input.plan.steps; not data.p.allowed_meta[s.metadata] }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].metadata.**"},
	},
	{
		name: "input indexing after a variable part",
		src: `t.u := {{"capability": "quote"}: true}
deny contains "d" if { some s in input.plan.steps; data.p.t[_][s.metadata] }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].metadata.**"},
	},
	{
		name: "walk",
		src:  `deny contains "x" if { walk(input, [_, "rm -rf"]) }`,
		want: []string{"input.**"},
	},
	{
		name: "data indexed by input",
		src:  `deny contains "x" if { some s in input.plan.steps; not data.allowed[s.namespace] }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].namespace.**"},
	},
	{
		name: "destructuring",
		src:  `deny contains "x" if { [a, _] := input.plan.steps; a.namespace == "bank" }`,
		want: []string{"input", "input.plan", "input.plan.steps.**"},
	},
	{
		name: "a step compared with an object",
		src:  `deny contains "x" if { some s in input.plan.steps; s.metadata == {"capability": "quote"} }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].metadata.**"},
	},
	{
		name: "an index used in a message",
		src:  `deny contains sprintf("%d", [i]) if { some i, s in input.plan.steps; s.step_id != sprintf("step-%d", [i + 1]) }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].step_id.**"},
	},
	{
		name: "else and default",
		src: `default mode := "none"
mode := input.plan.mode if { input.plan.mode != "" } else := "empty"
deny contains mode if mode == "confirm"`,
		want: []string{"input", "input.plan", "input.plan.mode.**"},
	},
	{
		name: "two definitions that may conflict",
		src: `pick := input.plan.steps[0].metadata if input.request == "a"
pick := input.plan.steps[1].metadata if input.phase == 1
deny contains "x" if is_object(pick)`,
		want: []string{"input", "input.phase=", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].metadata.**", "input.request="},
	},
	{
		name:  "a query naming a rule",
		query: "data.p.decision",
		src: `decision := {"deny": [s.step_id | some s in input.plan.steps; s.namespace == "bank"]}
other := input.request`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].namespace=", "input.plan.steps[*].step_id.**"},
	},
	{
		name: "comprehensions with one element at most, and with several",
		src: `first := [s.instruction | s := input.plan.steps[0]; s.namespace == "bank"]
ids := {s.step_id | some s in input.plan.steps}
deny contains "x" if { is_array(first); count(ids) > 1 }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].instruction", "input.plan.steps[*].namespace=", "input.plan.steps[*].step_id.**"},
	},
	{
		name: "a template string called with a set of several values",
		src: `ok if { m := internal.template_string([{input.request, input.plan.plan_id}]) }
deny contains "conflict" if not ok`,
		want: []string{"input", "input.plan", "input.plan.plan_id.**", "input.request.**"},
	},
	{
		name: "object.keys of the metadata",
		src:  `deny contains k if { some s in input.plan.steps; some k in object.keys(s.metadata) }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].metadata.**"},
	},
}

func readsOf(t *testing.T, src, query string) (*policy.Query, *policy.PlanMemo) {
	t.Helper()
	b, err := policy.Compile([]policy.Module{{File: "p.rego", Source: []byte("package p\n\n" + src + "\n")}},
		[]policy.DataFile{{File: "data.json", Value: map[string]any{"allowed": map[string]any{"demo-tools": true}}}}, evalOptions)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	q, err := b.Prepare(cmp.Or(query, "data.p"))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	m := q.NewPlanMemo(1024)
	if m == nil {
		t.Fatal("deterministic policy without a memo")
	}
	return q, m
}

// stockAllowList prepares the repository library's plan query over the demo allow-list.
func stockAllowList(t *testing.T) *policy.Query {
	t.Helper()
	var mods []policy.Module
	err := filepath.WalkDir(libraryDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".rego" || strings.HasSuffix(path, "_test.rego") {
			return err
		}
		src, err := os.ReadFile(path)
		mods = append(mods, policy.Module{File: path, Source: src})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	data := []policy.DataFile{{File: "data/agentd.json", Value: map[string]any{"agentd": map[string]any{"allowlist": map[string]any{
		"demo-tools": map[string]any{"stock-service": []any{"stock_quote"}},
	}}}}}
	b, err := policy.Compile(mods, data, evalOptions)
	if err != nil {
		t.Fatal(err)
	}
	q, err := b.Prepare("data.agentd.plan")
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// evalOptions give evaluations a deadline a loaded machine cannot reach: the
// differential tests compare decisions, and a timeout is none.
var evalOptions = policy.Options{Timeout: time.Minute}

// libraryDir is the repository's Rego library.
const libraryDir = "../../../policies"

func TestPlanMemo_ReadsOnlyWhatThePolicyObserves(t *testing.T) {
	for _, tc := range readCases {
		t.Run(tc.name, func(t *testing.T) {
			_, m := readsOf(t, tc.src, tc.query)
			if got := m.Reads().Paths(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("reads:\n  got  %s\n  want %s", strings.Join(got, " "), strings.Join(tc.want, " "))
			}
		})
	}
}

func TestPlanMemo_StockAllowListReadsStepIdentities(t *testing.T) {
	q := stockAllowList(t)
	want := []string{"input", "input.plan", "input.plan.steps=#", "input.plan.steps[*]",
		"input.plan.steps[*].agent_name.**", "input.plan.steps[*].metadata", "input.plan.steps[*].metadata.capability.**",
		"input.plan.steps[*].namespace.**", "input.plan.steps[*].step_id.**"}
	m := q.NewPlanMemo(16)
	if got := m.Reads().Paths(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reads:\n  got  %s\n  want %s", strings.Join(got, " "), strings.Join(want, " "))
	}
	leaves := []string{"input.plan.steps (size)", "input.plan.steps[*].agent_name", "input.plan.steps[*].metadata.capability",
		"input.plan.steps[*].namespace", "input.plan.steps[*].step_id"}
	if got := m.Reads().KeyPaths(); !reflect.DeepEqual(got, leaves) {
		t.Fatalf("key paths:\n  got  %s\n  want %s", strings.Join(got, " "), strings.Join(leaves, " "))
	}
	allowed := []string{"input", "input.plan", "input.plan.steps=#", "input.plan.steps[*]",
		"input.plan.steps[*].agent_name.**", "input.plan.steps[*].metadata", "input.plan.steps[*].metadata.capability.**",
		"input.plan.steps[*].namespace.**", "input.plan.steps[*].step_id"}
	if got := m.AllowedReads().Paths(); !reflect.DeepEqual(got, allowed) {
		t.Fatalf("allowed reads:\n  got  %s\n  want %s", strings.Join(got, " "), strings.Join(allowed, " "))
	}
	for src, want := range map[string]string{
		readCases[0].src: "input.plan.steps[*].namespace",
		`deny contains "x" if { some s in input.plan.steps; is_string(s.namespace) }`: "input.plan.steps[*].namespace (type)",
	} {
		_, m := readsOf(t, src, "")
		if got := m.Reads().KeyPaths(); !reflect.DeepEqual(got, []string{want}) {
			t.Fatalf("key paths of %q: %v, want %s", src, got, want)
		}
	}
}

// allowedCases are policies whose deny entries may be made of input parts that no
// condition reads, with the input paths an evaluation that allows the plan may observe
// (PlanMemo.AllowedReads; nil when the memo keeps no allowed keys). Each is also run by
// the differential test below.
var allowedCases = []struct {
	name, src string
	want      []string
	// same: the allowed keys tell apart what the exact ones do (a string compared is
	// read as a whole).
	same bool
}{
	{
		name: "a step named by its id",
		src:  `deny contains {"code": "x", "step_id": s.step_id} if { some s in input.plan.steps; not data.allowed[s.namespace] }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].namespace.**", "input.plan.steps[*].step_id"},
	},
	{
		name: "a message a function builds with sprintf",
		src: `msg(s) := sprintf("step %s: %v", [s.step_id, s.metadata])
deny contains msg(s) if { some s in input.plan.steps; s.namespace == "bank" }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].metadata", "input.plan.steps[*].namespace=", "input.plan.steps[*].step_id"},
	},
	{
		name: "an id through a helper that is always defined",
		src: `str(o, k) := v if { v := o[k]; is_string(v) } else := ""
deny contains [id, "no"] if { some s in input.plan.steps; s.agent_name == "bank"; id := str(s, "step_id") }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].agent_name=", "input.plan.steps[*].step_id"},
	},
	{
		name: "an id compared in a condition",
		src:  `deny contains s.step_id if { some s in input.plan.steps; s.step_id == "a"; s.namespace == "bank" }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].namespace=", "input.plan.steps[*].step_id="},
		same: true,
	},
	{
		name: "an id joined by concat",
		src:  `deny contains concat("/", [s.step_id, s.namespace]) if { some s in input.plan.steps; s.agent_name == "bank" }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].agent_name=", "input.plan.steps[*].namespace", "input.plan.steps[*].step_id"},
	},
	{
		name: "concat before the condition, failing on a number",
		src:  `deny contains m if { some s in input.plan.steps; m := concat("", [s.step_id, s.instruction]); s.agent_name == "bank" }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].agent_name=", "input.plan.steps[*].instruction", "input.plan.steps[*].step_id"},
	},
	{
		name: "an id in a template string",
		src:  `deny contains $"step {s.step_id}: {s.metadata} is not allowed" if { some s in input.plan.steps; s.namespace == "bank" }`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].metadata", "input.plan.steps[*].namespace=", "input.plan.steps[*].step_id"},
	},
	{
		name: "a template string compared",
		src:  `deny contains "x" if { some s in input.plan.steps; $"{s.step_id}/{s.namespace}" == "a/bank" }`,
		want: nil,
	},
	{
		name: "an id through a built-in that is no message",
		src:  `deny contains upper(s.step_id) if { some s in input.plan.steps; s.agent_name == "bank" }`,
		want: nil,
	},
	{
		name: "concat of an array that is no literal",
		src:  `deny contains concat("/", s.metadata.parameters.tags) if { some s in input.plan.steps; s.agent_name == "bank" }`,
		want: nil,
	},
	{
		name: "an id in a message whose format is not a constant",
		src:  `deny contains sprintf(s.instruction, [s.step_id]) if { some s in input.plan.steps; s.agent_name == "bank" }`,
		want: nil,
	},
	{
		name: "an id in the plan member",
		src: `deny contains s.step_id if { some s in input.plan.steps; s.agent_name == "bank" }
plan := {"steps": [{"step_id": s.step_id} | some s in input.plan.steps]}`,
		want: nil,
	},
	{
		name: "deny's entries counted by another member",
		src: `deny contains s.step_id if { some s in input.plan.steps; s.agent_name == "bank" }
plan := {"plan_id": sprintf("%d denials", [count(deny)])}`,
		want: []string{"input", "input.plan", "input.plan.steps", "input.plan.steps[*]", "input.plan.steps[*].agent_name=", "input.plan.steps[*].step_id"},
	},
	{
		name: "another set of ids, counted",
		src: `ids contains s.step_id if some s in input.plan.steps
deny contains "repeated step ids" if count(ids) != count(input.plan.steps)`,
		want: nil,
	},
	{
		name: "deny as a complete rule",
		src:  `deny := {s.step_id | some s in input.plan.steps; s.agent_name == "bank"}`,
		want: nil,
	},
	{
		name: "deny as a partial object",
		src:  `deny[s.step_id] := "x" if { some s in input.plan.steps; s.agent_name == "bank" }`,
		want: nil,
	},
}

func TestPlanMemo_AllowedReadsLeaveOutWhatOnlyDenialsShow(t *testing.T) {
	for _, tc := range allowedCases {
		t.Run(tc.name, func(t *testing.T) {
			q, m := readsOf(t, tc.src, "")
			allowed := m.AllowedReads()
			var merged int
			if allowed != nil {
				merged = allowedKeysSound(t, q, m, randomInput, 1500)
			}
			switch {
			case tc.want == nil && allowed != nil:
				t.Fatalf("allowed reads %v; want none", allowed.Paths())
			case tc.want == nil:
			case allowed == nil:
				t.Fatalf("no allowed reads; want %v", tc.want)
			case !reflect.DeepEqual(allowed.Paths(), tc.want):
				t.Errorf("allowed reads:\n  got  %s\n  want %s", strings.Join(allowed.Paths(), " "), strings.Join(tc.want, " "))
			case merged == 0 && !tc.same:
				t.Fatal("no two inputs with different exact keys shared an allowed key: the test proves nothing")
			}
		})
	}
}

// randomInput draws a plan-review input from small pools, so that inputs often agree
// on some parts and differ in others.
func randomInput(r *rand.Rand) ast.Value {
	pick := func(xs ...any) any { return xs[r.IntN(len(xs))] }
	var steps []any
	for i := range r.IntN(4) {
		md := map[string]any{}
		if c := pick("quote", "trade", ""); c != "" {
			md["capability"] = c
		}
		if r.IntN(3) == 0 {
			md["parameters"] = map[string]any{"symbol": pick("AAPL", "MSFT")}
		}
		s := map[string]any{
			"step_id":     pick(fmt.Sprintf("step-%d", i+1), "a"),
			"namespace":   pick("demo-tools", "bank"),
			"agent_name":  pick("quote", "bank", "demo-tools"),
			"instruction": pick("hi", "rm -rf", "a much longer instruction", "12", 12),
			"metadata":    md,
		}
		if r.IntN(2) == 0 {
			delete(s, "instruction")
		}
		if r.IntN(5) == 0 {
			delete(s, "step_id")
		}
		steps = append(steps, s)
	}
	plan := map[string]any{"plan_id": pick("p1", "p2"), "mode": pick("auto", "confirm", "")}
	if r.IntN(2) == 0 {
		plan["needs_user_input"] = map[string]any{"question": pick("which?", "when?"), "partial_progress": pick("none", "half")}
	}
	if r.IntN(8) > 0 {
		plan["steps"] = steps
	}
	v, err := ast.InterfaceToValue(map[string]any{
		"plan": plan, "phase": pick(1, 2), "request": pick("a", "b", "p1"),
		"metadata": map[string]any{"tenant": pick("acme", "other")}, "enrichments": map[string]any{},
	})
	if err != nil {
		panic(err)
	}
	return v
}

// randomStockInput draws a plan-review input whose steps the stock allow-list (which
// allows demo-tools/stock-service/stock_quote) often allows, with step ids and
// instructions of several kinds.
func randomStockInput(r *rand.Rand) ast.Value {
	pick := func(xs ...any) any { return xs[r.IntN(len(xs))] }
	var steps []any
	for i := range r.IntN(3) {
		s := map[string]any{
			"step_id":     pick(fmt.Sprintf("step-%d", i+1), "a", "", 7, nil),
			"namespace":   pick("demo-tools", "demo-tools", "demo-tools", "bank"),
			"agent_name":  pick("stock-service", "stock-service", "stock-service", 3),
			"instruction": pick("hi", "rm -rf"),
			"metadata":    map[string]any{"capability": pick("stock_quote", "stock_quote", "stock_quote", "", false)},
		}
		if r.IntN(4) == 0 {
			delete(s, "step_id")
		}
		steps = append(steps, s)
	}
	v, err := ast.InterfaceToValue(map[string]any{"plan": map[string]any{"plan_id": "p", "steps": steps}, "phase": 1, "request": "q"})
	if err != nil {
		panic(err)
	}
	return v
}

// outcome is an unmemoized evaluation of an input.
type outcome struct {
	d     policy.PlanDecision
	err   error
	input ast.Value
}

func (o outcome) allowed() bool { return o.err == nil && o.d.Allowed() }

// sameKeys evaluates n inputs drawn by gen without the memo, keyed under tree, and
// fails when an input and an earlier one with the same key do not agree; it returns how
// many such pairs count (say, differ in what the test is about).
func sameKeys(t *testing.T, q *policy.Query, tree *reads.Tree, gen func(*rand.Rand) ast.Value, n int,
	agree, count func(first, next outcome) bool) (counted int) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 11))
	seen := map[string]outcome{}
	for range n {
		in := gen(r)
		d, err := q.PlanDecision(context.Background(), in)
		next := outcome{d, err, in}
		key := reads.KeyOfValue(tree, in)
		first, ok := seen[key]
		if !ok {
			seen[key] = next
			continue
		}
		if !agree(first, next) {
			t.Fatalf("same key under %v, decided differently:\n  %v → %+v (error %v)\n  %v → %+v (error %v)",
				tree.Paths(), first.input, first.d, first.err, in, next.d, next.err)
		}
		if count(first, next) {
			counted++
		}
	}
	return counted
}

// keysSound checks the memo's exact keys on n generated inputs: two inputs with the same
// key get the same decision (or both an error). It returns how many inputs shared a key
// with a different earlier input.
func keysSound(t *testing.T, q *policy.Query, m *policy.PlanMemo, n int) (merged int) {
	t.Helper()
	return sameKeys(t, q, m.Reads(), randomInput, n,
		func(a, b outcome) bool { return (a.err != nil) == (b.err != nil) && reflect.DeepEqual(a.d, b.d) },
		func(a, b outcome) bool { return a.input.Compare(b.input) != 0 })
}

// allowedKeysSound checks the memo's allowed keys on n inputs drawn by gen: two inputs
// with the same allowed key are both allowed or both not (an error is not), and when
// allowed, by the same decision. It returns how many allowed inputs shared an allowed
// key with an earlier one of another exact key.
func allowedKeysSound(t *testing.T, q *policy.Query, m *policy.PlanMemo, gen func(*rand.Rand) ast.Value, n int) (merged int) {
	t.Helper()
	return sameKeys(t, q, m.AllowedReads(), gen, n,
		func(a, b outcome) bool {
			return a.allowed() == b.allowed() && (!a.allowed() || reflect.DeepEqual(a.d, b.d))
		},
		func(a, b outcome) bool {
			return b.allowed() && reads.KeyOfValue(m.Reads(), a.input) != reads.KeyOfValue(m.Reads(), b.input)
		})
}

// TestPlanMemo_EqualKeysMeanEqualDecisions is the differential test of the memo keys:
// over generated inputs, any two with the same key get the same decision (or both an
// error) from unmemoized evaluation, for every policy above and the stock allow-list;
// and keys do merge inputs that differ, so the test can fail.
func TestPlanMemo_EqualKeysMeanEqualDecisions(t *testing.T) {
	for _, tc := range readCases {
		t.Run(tc.name, func(t *testing.T) {
			q, m := readsOf(t, tc.src, tc.query)
			if keysSound(t, q, m, 1500) == 0 && !m.Reads().ReadsWhole() {
				t.Fatal("no two different inputs shared a key: the test proves nothing")
			}
		})
	}
	t.Run("stock allow-list", func(t *testing.T) {
		q := stockAllowList(t)
		m := q.NewPlanMemo(16)
		if keysSound(t, q, m, 1500) == 0 {
			t.Fatal("no two different inputs shared a key: the test proves nothing")
		}
		if allowedKeysSound(t, q, m, randomStockInput, 1500) == 0 {
			t.Fatal("no two inputs with different exact keys shared an allowed key: the test proves nothing")
		}
	})
}

// FuzzPlanMemo_KeysSound runs the differential check on policies derived from the
// cases above: whatever Rego compiles, the analysis must not fail and its keys must
// never merge inputs the policy tells apart.
func FuzzPlanMemo_KeysSound(f *testing.F) {
	for _, tc := range readCases {
		f.Add(tc.src)
	}
	for _, tc := range allowedCases {
		f.Add(tc.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		b, err := policy.Compile([]policy.Module{{File: "p.rego", Source: []byte("package p\n\n" + src + "\n")}}, nil, evalOptions)
		if err != nil {
			return
		}
		q, err := b.Prepare("data.p")
		if err != nil {
			return
		}
		if m := q.NewPlanMemo(1024); m != nil {
			keysSound(t, q, m, 100)
			if m.AllowedReads() != nil {
				allowedKeysSound(t, q, m, randomInput, 100)
			}
		}
	})
}

// randomPlan draws a RoutingPlan exercising every member PlanInput renders: optional
// ones present or not, nil and empty slices, nested metadata of every JSON kind.
func randomPlan(r *rand.Rand) *engine.RoutingPlan {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	p := &engine.RoutingPlan{
		PlanID: pick("p1", ""), OriginalRequest: pick("quote", ""), Mode: engine.PlanMode(pick("", "autonomous")),
		CreatedAt: time.Date(2025, 3, 1, 12, r.IntN(60), 0, r.IntN(1000), time.UTC), PhaseNumber: r.IntN(3),
		ContinuationNote: pick("", "then buy"),
	}
	if r.IntN(2) == 0 {
		t := r.IntN(2) == 0
		p.Terminal = &t
	}
	if r.IntN(3) == 0 {
		p.NeedsUserInput = &engine.NeedsUserInput{Question: pick("", "which?"), PartialProgress: pick("", "half")}
		if r.IntN(2) == 0 {
			p.NeedsUserInput.MissingFields = []string{"symbol"}
		}
	}
	if r.IntN(6) > 0 {
		p.Steps = []engine.RoutingStep{}
	}
	for i := range r.IntN(3) {
		s := wiretest.StockStep(fmt.Sprintf("step-%d", i+1), pick("quote", "trade"))
		s.Instruction = pick("", "go")
		switch r.IntN(4) {
		case 0:
			s.Metadata = nil
		case 1:
			s.Metadata["parameters"] = map[string]any{"n": []any{1.5, json.Number("2"), nil, true, "x", map[string]any{}}}
		case 2:
			s.Metadata["capability"] = 7
		}
		if r.IntN(2) == 0 {
			s.DependsOn = nil
		}
		if r.IntN(3) == 0 {
			s.ImplicitDeps = []string{"step-0"}
		}
		p.Steps = append(p.Steps, s)
	}
	return p
}

// planInput has the members of the plan-review input, so that its View is that input.
type planInput struct {
	Plan        *engine.RoutingPlan `json:"plan"`
	Phase       int                 `json:"phase"`
	Request     string              `json:"request"`
	Metadata    map[string]any      `json:"metadata"`
	Enrichments map[string]any      `json:"enrichments"`
	Labels      []string            `json:"labels"`
	History     []op.HistoryStep    `json:"history"`
}

// TestPlanMemo_PlanKeyIsKeyOfPlanInput: the key computed from the typed plan equals the
// key of the Rego input PlanInput builds, for every read tree above, the stock
// allow-list's, one reading every path in part and one reading everything whole.
func TestPlanMemo_PlanKeyIsKeyOfPlanInput(t *testing.T) {
	var memos []*policy.PlanMemo
	for _, tc := range readCases {
		_, m := readsOf(t, tc.src, tc.query)
		memos = append(memos, m)
	}
	memos = append(memos, stockAllowList(t).NewPlanMemo(16))
	_, whole := readsOf(t, `deny contains "x" if walk(input, [_, "rm -rf"])`, "")
	r := rand.New(rand.NewPCG(5, 8))
	for range 500 {
		p := randomPlan(r)
		md := map[string]any{"tenant": "acme", "n": json.Number("1.50")}
		in, err := policy.PlanInput(p, 2, "q", md, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range memos {
			got, err := m.PlanKey(p, 2, "q", md, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := reads.KeyOfValue(m.Reads(), in); got.Exact != want {
				t.Fatalf("PlanKey differs from the key of PlanInput for reads %v on %v", m.Reads().Paths(), in)
			}
			if allowed := m.AllowedReads(); allowed != nil && got.Allowed != reads.KeyOfValue(allowed, in) || allowed == nil && got.Allowed != "" {
				t.Fatalf("PlanKey's allowed key differs from the key of PlanInput for allowed reads %v on %v", allowed, in)
			}
			_, key, hit, err := m.Lookup(p, 2, "q", md, nil, nil)
			if err != nil || !hit && key != got {
				t.Fatalf("Lookup: key %q, %v; want PlanKey's %q", key, err, got)
			}
			m.Put(got, policy.PlanDecision{})
			if _, _, hit, _ := m.Lookup(p, 2, "q", md, nil, nil); !hit {
				t.Fatalf("Lookup misses the key just put, for reads %v", m.Reads().Paths())
			}
		}
		view := engine.ViewOf(&planInput{p, 2, "q", md, nil, []string{}, []op.HistoryStep{}})
		for _, tree := range []*reads.Tree{reads.ReadingWhole(), reads.ReadingEveryPath(in, false), reads.ReadingEveryPath(in, true)} {
			got, err := tree.Key(view)
			if err != nil {
				t.Fatal(err)
			}
			if want := reads.KeyOfValue(tree, in); got != want {
				t.Fatalf("Key differs from the key of PlanInput for reads %v on %v", tree.Paths(), in)
			}
		}
	}
	bad := []struct {
		name string
		plan *engine.RoutingPlan
		md   map[string]any
	}{
		{"a NaN in the metadata", wiretest.StockPlan(), map[string]any{"x": math.NaN()}},
		{"an infinity in a step's metadata", wiretest.StockPlan(engine.RoutingStep{StepID: "s", Metadata: map[string]any{"p": []any{math.Inf(1)}}}), nil},
		{"a channel", wiretest.StockPlan(), map[string]any{"c": make(chan int)}},
		{"a year past 9999", &engine.RoutingPlan{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, nil},
	}
	for _, tc := range bad {
		if _, err := policy.PlanInput(tc.plan, 1, "", tc.md, nil, nil); err == nil {
			t.Fatalf("%s: PlanInput accepted it", tc.name)
		}
		for _, m := range append(memos, whole) {
			_, keyErr := m.PlanKey(tc.plan, 1, "", tc.md, nil, nil)
			_, inputErr := m.PlanInput(tc.plan, 1, "", tc.md, nil, nil)
			if (keyErr == nil) != (inputErr == nil) {
				t.Fatalf("%s: PlanKey error %v, the memo's PlanInput error %v (reads %v)", tc.name, keyErr, inputErr, m.Reads().Paths())
			}
			if m == whole && keyErr == nil {
				t.Fatalf("%s: a memo that reads everything accepted it", tc.name)
			}
		}
	}
	var nilPtr *struct{ A int }
	in, err := policy.PlanInput(wiretest.StockPlan(), 1, "", map[string]any{"p": nilPtr}, nil, nil)
	if err != nil || in.(ast.Object).Get(ast.StringTerm("metadata")).Value.(ast.Object).Get(ast.StringTerm("p")).Value.Compare(ast.NullValue) != 0 {
		t.Fatalf("a nil pointer in the metadata: %v, %v; want null", in, err)
	}
}

// TestPlanMemo_PlanInputIsWhatEvaluationsRead: the memo's PlanInput keeps what its
// query may read and nothing else, so it has PlanKey's key, and the query decides on it
// as on the whole input (or fails on both), for every policy above and the stock
// allow-list; a value no evaluation reads does not even have to convert.
func TestPlanMemo_PlanInputIsWhatEvaluationsRead(t *testing.T) {
	type memoized struct {
		q *policy.Query
		m *policy.PlanMemo
	}
	var cases []memoized
	for _, tc := range readCases {
		q, m := readsOf(t, tc.src, tc.query)
		cases = append(cases, memoized{q, m})
	}
	for _, src := range []string{ // sizes of struct objects, of lists read no deeper, of typed slices
		`deny contains "big plan" if count(input.plan) > 5`,
		`deny contains s.step_id if { some s in input.plan.steps; count(s) > 5 }`,
		`deny contains "long" if { some s in input.plan.steps; count(s.metadata.parameters.n) > 3 }`,
		`deny contains "deps" if { some s in input.plan.steps; count(s.depends_on) == 1 }`,
	} {
		q, m := readsOf(t, src, "")
		cases = append(cases, memoized{q, m})
	}
	stock := stockAllowList(t)
	cases = append(cases, memoized{stock, stock.NewPlanMemo(16)})
	r := rand.New(rand.NewPCG(3, 9))
	smaller := 0
	for range 300 {
		p := randomPlan(r)
		md := map[string]any{"tenant": "acme", "n": json.Number("1.50")}
		whole, err := policy.PlanInput(p, 2, "q", md, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			in, err := c.m.PlanInput(p, 2, "q", md, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			key, _ := c.m.PlanKey(p, 2, "q", md, nil, nil)
			if reads.KeyOfValue(c.m.Reads(), in) != key.Exact {
				t.Fatalf("the key of PlanInput %v differs from PlanKey for reads %v", in, c.m.Reads().Paths())
			}
			if in.Compare(whole) != 0 {
				smaller++
			}
			got, gotErr := c.q.PlanDecision(context.Background(), in)
			want, wantErr := c.q.PlanDecision(context.Background(), whole)
			if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("reads %v: decision on %v is %+v (%v), on the whole input %+v (%v)", c.m.Reads().Paths(), in, got, gotErr, want, wantErr)
			}
		}
	}
	if smaller == 0 {
		t.Fatal("no PlanInput left anything out: the test proves nothing")
	}
	m := stock.NewPlanMemo(16)
	unread := map[string]any{"c": make(chan int), "x": math.NaN()}
	if _, err := m.PlanInput(wiretest.StockPlan(), 1, "", unread, nil, nil); err != nil {
		t.Errorf("metadata the allow-list never reads was converted: %v", err)
	}
}

// TestPlanMemo_KeysSeparateInputsDecidedDifferently: pairs of inputs, found by review,
// that a policy decides differently (one of them may be an evaluation error), and which
// an earlier analysis gave the same key.
func TestPlanMemo_KeysSeparateInputsDecidedDifferently(t *testing.T) {
	steps := func(md string) string {
		return `{"plan": {"steps": [{"step_id": "s1", "metadata": ` + md + `}]}, "metadata": {"tenant": "acme"}}`
	}
	needs := func(q, p string) string {
		return `{"plan": {"needs_user_input": {"question": "` + q + `", "partial_progress": "` + p + `"}}, "metadata": {"question": "which?", "partial_progress": "none"}}`
	}
	for _, tc := range []struct{ name, src, a, b string }{
		{"a single rule with several solutions", `r := x if { some x in input.a }
deny contains "d" if not is_object(r)`, `{"a": [{"k": 1}, {"k": 1}]}`, `{"a": [{"k": 1}, {"k": 2}]}`},
		{"a function with several solutions", `f(xs) := x if { some x in xs }
deny contains "d" if is_object(f(input.a))`, `{"a": [{"k": 1}, {"k": 1}]}`, `{"a": [{"k": 1}, {"k": 2}]}`},
		{"a ref-head rule with several solutions", `o.x := v if { some v in input.a }
deny contains "d" if is_object(data.p.o.x)`, `{"a": [{"k": 1}, {"k": 1}]}`, `{"a": [{"k": 1}, {"k": 2}]}`},
		{"a head variable that is a key", `seen[m].first := true if { some s in input.plan.steps; m := s.metadata }
deny contains "duplicate" if count(seen) != count(input.plan.steps)`,
			`{"plan": {"steps": [{"metadata": {"c": "quote"}}, {"metadata": {"c": "quote"}}]}}`,
			`{"plan": {"steps": [{"metadata": {"c": "quote"}}, {"metadata": {"c": "trade"}}]}}`},
		{"a partial object indexed by input", `allowed[m] := true if some m in [{"capability": "quote"}]
deny contains "no" if { some s in input.plan.steps; not data.p.allowed[s.metadata] }`,
			steps(`{"capability": "quote"}`), steps(`{"capability": "trade"}`)},
		{"input indexing after a variable part", `t.u := {{"a": 1}: true}
deny contains "d" if data.p.t[_][input.x]`, `{"x": {"a": 1}}`, `{"x": {"a": 2}}`},
		{"pattern variables on the right of a composite unification", `approved := {"capability": "quote"}
deny contains "unapproved" if { some s in input.plan.steps; [data.p.approved, 1] = [m, _]; not m = s.metadata }`,
			steps(`{"capability": "quote"}`), steps(`{"capability": "trade"}`)},
		{"a composite key with a variable", `s contains [{"question": "which?", "partial_progress": "none"}]
deny contains "eq" if { data.p.s[[x]]; x = input.plan.needs_user_input }`,
			needs("which?", "none"), needs("when?", "half")},
		{"iteration through a composite key", `s contains [1]
s contains [2]
f(k) := input.plan.needs_user_input if k == 1
else := input.metadata
r := y if { data.p.s[[x]]; y := f(x) }
deny contains "d" if is_object(r)`, needs("which?", "none"), needs("when?", "half")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, m := readsOf(t, tc.src, "")
			a, b := jsonInput(t, tc.a), jsonInput(t, tc.b)
			da, errA := q.PlanDecision(context.Background(), a)
			db, errB := q.PlanDecision(context.Background(), b)
			if (errA != nil) == (errB != nil) && reflect.DeepEqual(da, db) {
				t.Fatalf("the policy decides both inputs alike (%+v, %v): the case proves nothing", da, errA)
			}
			if reads.KeyOfValue(m.Reads(), a) == reads.KeyOfValue(m.Reads(), b) {
				t.Fatalf("same key for inputs decided %+v (%v) and %+v (%v); reads %v", da, errA, db, errB, m.Reads().Paths())
			}
		})
	}
}

func jsonInput(t *testing.T, s string) ast.Value {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	av, err := ast.InterfaceToValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return av
}

// TestMemoizable_RefusesPoliciesThatDependOnMoreThanTheInput: a decision that can change
// for the same input must not be memoized.
func TestMemoizable_RefusesPoliciesThatDependOnMoreThanTheInput(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      bool
	}{
		{"input and data only", `deny contains "x" if input.plan.mode == "confirm"`, true},
		{"the clock", `deny contains "late" if time.now_ns() > 0`, false},
		{"a random number", `deny contains "x" if rand.intn("k", 10) == 3`, false},
		{"a non-deterministic built-in substituted by with", `g(a, b) := 0
deny contains sprintf("%d", [x]) if { x := g("a", 1000000) with g as rand.intn }`, false},
		{"certificate verification against the clock", `deny contains "untrusted" if {
	[ok, _] := crypto.x509.parse_and_verify_certificates(input.metadata.chain)
	not ok
}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := policy.Compile([]policy.Module{{File: "p.rego", Source: []byte("package p\n\n" + tc.src + "\n")}}, nil, policy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			q, err := b.Prepare("data.p")
			if err != nil {
				t.Fatal(err)
			}
			if got := q.NewPlanMemo(16) != nil; got != tc.want {
				t.Fatalf("memoizable = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestKey_AgreesWithJSON: over generated plans with generated metadata and enrichments,
// for every read tree above, the stock allow-list's, one reading every path of an input
// and one reading everything whole, two inputs get the same key exactly when the parts
// of their encoding/json form that the tree reads are the same.
func TestKey_AgreesWithJSON(t *testing.T) {
	r := wiretest.Rand(5)
	trees := []*reads.Tree{reads.ReadingWhole(), stockAllowList(t).NewPlanMemo(16).Reads()}
	for _, tc := range readCases {
		_, m := readsOf(t, tc.src, tc.query)
		trees = append(trees, m.Reads())
	}
	inputs := make([]planInput, 300)
	for i := range inputs {
		inputs[i] = planInput{wiretest.Plan(r), 1 + r.IntN(2), "q", wiretest.Object(r, 2), wiretest.Object(r, 1), []string{}, []op.HistoryStep{}}
	}
	in, err := policy.PlanInput(inputs[0].Plan, inputs[0].Phase, inputs[0].Request, inputs[0].Metadata, inputs[0].Enrichments, nil)
	if err != nil {
		t.Fatal(err)
	}
	trees = append(trees, reads.ReadingEveryPath(in, false), reads.ReadingEveryPath(in, true))
	for _, tree := range trees {
		byKey, byJSON := map[string]string{}, map[string]string{}
		for i := range inputs {
			key, err := tree.Key(engine.ViewOf(&inputs[i]))
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(reads.ProjectJSON(tree, wiretest.JSON(t, &inputs[i])))
			if err != nil {
				t.Fatal(err)
			}
			proj := string(b)
			if other, ok := byKey[key]; ok && other != proj {
				t.Fatalf("reads %v: one key for inputs whose read parts differ:\n %s\n %s", tree.Paths(), other, proj)
			}
			if other, ok := byJSON[proj]; ok && other != key {
				t.Fatalf("reads %v: different keys for inputs whose read parts are the same:\n %s", tree.Paths(), proj)
			}
			byKey[key], byJSON[proj] = proj, key
		}
	}
}

// TestPlanMemo_HitAllocatesNothing: a memo hit on the stock allow-list allocates
// nothing, with a key short enough to be its own encoding and with a digested one.
func TestPlanMemo_HitAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	m := stockAllowList(t).NewPlanMemo(16)
	for _, steps := range []int{3, 40} {
		for _, ns := range []string{"demo-tools", "bank"} { // allowed (the allowed key), denied (the exact one)
			p := &engine.RoutingPlan{PlanID: "p"}
			for i := range steps {
				p.Steps = append(p.Steps, engine.RoutingStep{StepID: fmt.Sprintf("step-%d", i+1), Namespace: ns,
					AgentName: "stock-service", Metadata: map[string]any{"capability": "stock_quote"}})
			}
			md := map[string]any{}
			key, err := m.PlanKey(p, 1, "q", md, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if long := key.Allowed[0] == 0; long != (steps == 40) {
				t.Fatalf("%d steps: digested key = %v", steps, long)
			}
			d := policy.PlanDecision{}
			if ns != "demo-tools" {
				d.Deny = []policy.Violation{{Code: "namespace_not_allowed", StepID: "step-1"}}
			}
			m.Put(key, d)
			if allocs := testing.AllocsPerRun(100, func() {
				if _, _, hit, _ := m.Lookup(p, 1, "q", md, nil, nil); !hit {
					t.Fatal("miss")
				}
			}); allocs != 0 {
				t.Errorf("%d steps in %s: a hit allocates %v times", steps, ns, allocs)
			}
		}
	}
}
