package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/hooktest"
	"github.com/agentd-dev/agentd/engine/store"
)

// diffCall is one call of a differential script: an eval call name and its API body.
type diffCall struct {
	Call string          `json:"call"`
	Body json.RawMessage `json:"body"`
}

func dc(call, body string) diffCall { return diffCall{call, json.RawMessage(body)} }

const (
	diffQuoteStep = `{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote ACME","metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME"}}}`
	diffQuoteCall = `{"request_id":"%s","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"ACME"}}`
)

// diffScripts are scripted call sequences, each on requests of its own.
var diffScripts = map[string][]diffCall{
	"allowed": {
		dc("before_planning", `{"request_id":"d-allowed","request":"What is ACME at?","metadata":{"tenant":"acme"}}`),
		dc("after_planning", `{"request_id":"d-allowed","plan":{"plan_id":"p1","steps":[`+diffQuoteStep+`]}}`),
		dc("operation", `{"operation":"tool_call","call":`+fmt.Sprintf(diffQuoteCall, "d-allowed")+`}`),
		dc("after_execution", `{"request_id":"d-allowed","result":{"plan_id":"p1","success":true,"steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","capability":"stock_quote","success":true,"response":{"data":{"price":182.5,"currency":"USD"}}}]}}`),
		dc("after_synthesis", `{"request_id":"d-allowed","response":"ACME is at 182.50; mail ir@acme.example"}`),
	},
	"rejected": {
		dc("before_planning", `{"request_id":"d-rejected","request":"Buy ACME","metadata":{"tenant":"acme"}}`),
		dc("after_planning", `{"request_id":"d-rejected","plan":{"plan_id":"p2","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":5}}}]}}`),
	},
	"short circuit": {
		dc("before_planning", `{"request_id":"d-first","request":"Who runs ACME?","metadata":{"tenant":"beta"}}`),
		dc("after_planning", `{"request_id":"d-first","plan":{"plan_id":"p1","steps":[`+diffQuoteStep+`]}}`),
		dc("after_synthesis", `{"request_id":"d-first","response":"Jane Doe"}`),
		dc("before_planning", `{"request_id":"d-again","request":"  who runs acme?","metadata":{"tenant":"beta"}}`),
	},
	"multi-phase": {
		dc("before_planning", `{"request_id":"d-phases","request":"Quote ACME twice"}`),
		dc("after_planning", `{"request_id":"d-phases","plan":{"plan_id":"p1","terminal":false,"steps":[`+diffQuoteStep+`]}}`),
		dc("after_planning", `{"request_id":"d-phases","plan":{"plan_id":"p2","steps":[{"step_id":"step-2","agent_name":"stock-service","namespace":"demo-tools","instruction":"again","implicit_deps":["step-1"],"metadata":{"capability":"stock_quote","parameters":{"symbol":"{{step-1.response.data.currency}}"}}}]}}`),
	},
	"guard denial": {
		dc("before_planning", `{"request_id":"d-guard","request":"Buy ACME for 25000"}`),
		dc("after_planning", `{"request_id":"d-guard","plan":{"plan_id":"p3","steps":[{"step_id":"step-1","agent_name":"broker","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":25000}}}]}}`),
		dc("operation", `{"operation":"tool_call","call":{"request_id":"d-guard","step_id":"step-1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"amount":25000}}}`),
		dc("operation", `{"operation":"tool_call","call":{"request_id":"d-guard","step_id":"step-1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"amount":1}}}`),
	},
	"retried phase": {
		dc("before_planning", `{"request_id":"d-retry","request":"What is ACME at?"}`),
		dc("after_planning", `{"request_id":"d-retry","plan":{"plan_id":"p1","steps":[`+diffQuoteStep+`]}}`),
		dc("after_planning", `{"request_id":"d-retry","plan":{"plan_id":"p1","steps":[`+diffQuoteStep+`]}}`),
	},
}

// TestDriver_EveryEntryPointWritesTheSameRecords runs the same scripted call sequences
// through the daemon over HTTP, through `agentd eval --script` and through the pipeline
// cases of `agentd test`, and compares the execution records they leave field by
// field (times and durations aside).
func TestDriver_EveryEntryPointWritesTheSameRecords(t *testing.T) {
	dir := copyExample(t, "stock-agent")
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range diffScripts {
			if !yield(name) {
				return
			}
		}
	})
	var script []diffCall
	for _, name := range names {
		script = append(script, diffScripts[name]...)
	}
	writeFile(t, dir, "tests/zz-differential.yaml", hookTestsOf(t, script))
	ids := requestIDs(script)

	daemon := startDaemon(t, dir)
	viaHTTP := map[string]any{}
	for _, c := range script {
		if status, body := daemon.do(t, "POST", evalRoutes[c.Call], string(c.Body)); status >= 500 {
			t.Fatalf("%s answered %d %s", c.Call, status, body)
		}
	}
	for _, id := range ids {
		status, body := daemon.do(t, "GET", "/v1/executions/"+id, "")
		if status != 200 {
			t.Fatalf("record %s: %d %s", id, status, body)
		}
		viaHTTP[id] = decodeRecord(t, []byte(body))
	}

	data, err := json.Marshal(script)
	if err != nil {
		t.Fatal(err)
	}
	scriptFile := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(scriptFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, stderr := runCLI(t, "eval", "--config", dir, "--script", scriptFile)
	var evalOut struct{ Records map[string]json.RawMessage }
	if err := json.Unmarshal([]byte(out), &evalOut); err != nil {
		t.Fatalf("eval --script output: %v\n%s%s", err, out, stderr)
	}
	viaEval := map[string]any{}
	for id, rec := range evalOut.Records {
		viaEval[id] = decodeRecord(t, rec)
	}

	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := store.NewMemory(store.MemoryOptions{})
	if _, err := hooktest.Run(context.Background(), dir, gen, hooktest.Options{States: mem, Records: mem}); err != nil {
		t.Fatal(err)
	}
	viaTest := map[string]any{}
	for _, id := range ids {
		rec, err := mem.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("agentd test left no record %s: %v", id, err)
		}
		data, _ := json.Marshal(rec)
		viaTest[id] = decodeRecord(t, data)
	}

	for _, id := range ids {
		for _, other := range []struct {
			name string
			recs map[string]any
		}{{"agentd eval --script", viaEval}, {"agentd test", viaTest}} {
			if !reflect.DeepEqual(viaHTTP[id], other.recs[id]) {
				a, _ := json.MarshalIndent(viaHTTP[id], "", "  ")
				b, _ := json.MarshalIndent(other.recs[id], "", "  ")
				t.Errorf("record %s differs between the daemon and %s:\n--- daemon\n%s\n--- %s\n%s", id, other.name, a, other.name, b)
			}
		}
	}
	for id, want := range map[string]string{"d-allowed": "completed", "d-rejected": "failed", "d-again": "completed", "d-guard": "open"} {
		if got := viaHTTP[id].(map[string]any)["lifecycle"]; got != want {
			t.Errorf("record %s lifecycle = %v, want %s", id, got, want)
		}
	}
	if src := viaHTTP["d-again"].(map[string]any)["final_response_source"]; src != "before_planning_short_circuit" {
		t.Errorf("d-again was not answered from the cache: %v", src)
	}
}

// volatile are record fields that differ between runs: times, durations, decision ids
// and trace ids.
var volatile = map[string]bool{"created_at": true, "updated_at": true, "started_at": true, "duration": true,
	"open_until": true, "total_duration": true, "at": true, "replaced_at": true, "decision_id": true,
	"trace_id": true, "span_id": true}

// timestamp is a time written into a text (a pending approval's reason names when it
// expires), which differs between runs like the volatile fields.
var timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// decodeRecord decodes a record, drops its volatile fields and blanks the times in its
// texts, at every depth.
func decodeRecord(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("record: %v in %s", err, data)
	}
	var strip func(v any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if volatile[k] {
					delete(x, k)
					continue
				}
				if text, ok := e.(string); ok {
					x[k] = timestamp.ReplaceAllString(text, "<time>")
					continue
				}
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(v)
	return v
}

// requestIDs lists the requests a script names, in order of first use.
func requestIDs(script []diffCall) []string {
	var ids []string
	for _, c := range script {
		if id := requestIDOf(c.Body); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// hookTestsOf writes a script as HookTests cases that continue each request by its id.
func hookTestsOf(t *testing.T, script []diffCall) string {
	t.Helper()
	var cases []map[string]any
	for i, c := range script {
		var body map[string]any
		if err := json.Unmarshal(c.Body, &body); err != nil {
			t.Fatal(err)
		}
		given := map[string]any{}
		stage := c.Call
		if c.Call == "operation" {
			call := body["call"].(map[string]any)
			given["request_id"], given["operation"] = call["request_id"], body["operation"]
			delete(call, "request_id")
			given["call"] = call
		} else {
			for k, v := range body {
				given[k] = v
			}
		}
		cases = append(cases, map[string]any{"name": fmt.Sprintf("%d %s %s", i+1, c.Call, given["request_id"]), "stage": stage, "given": given, "expect": map[string]any{}})
	}
	out, err := yaml.Marshal(map[string]any{"apiVersion": "agentd.dev/v1", "kind": "HookTests", "tests": cases})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out)) + "\n"
}
