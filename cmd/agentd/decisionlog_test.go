package main

import (
	"compress/gzip"
	"encoding/json"
	"github.com/agentd-dev/agentd/internal/capture"
	"github.com/open-policy-agent/opa/v1/plugins/logs"
	"github.com/openai/openai-go/v3/option"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// decisionOf returns the decision_id of an API answer.
func decisionOf(t *testing.T, body string) string {
	t.Helper()
	var v struct {
		DecisionID string `json:"decision_id"`
		Error      struct {
			DecisionID string `json:"decision_id"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.DecisionID == "" && v.Error.DecisionID == "" {
		t.Fatalf("answer without decision_id: %s", body)
	}
	return v.DecisionID + v.Error.DecisionID
}

// logEvents reads a decision log file: decision id -> its events' kinds.
func logEvents(t *testing.T, path string) (map[string][]string, []map[string]any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string][]string{}
	var all []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("decision log line %q: %v", line, err)
		}
		id, _ := e["decision_id"].(string)
		kind, _ := e["kind"].(string)
		byID[id] = append(byID[id], kind)
		all = append(all, e)
	}
	return byID, all
}

// With a mask on metadata.email, no decision event holds the address, in any sink,
// payloads logged or not; every stage call and check is exactly one event, under the
// decision id its answer named.
func TestServe_DecisionLogMasksAndCountsEveryDecision(t *testing.T) {
	dir := copyExample(t, "stock-agent")
	writeFile(t, dir, "hooks/40-log.yaml", "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: log}\ndecision_log:\n  mask: [metadata.email]\n")
	endpoint := &capture.Bodies{}
	srv := httptest.NewServer(endpoint)
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "decisions.log")
	d := startDaemon(t, dir, "--log-payloads", "--decision-log-file", file, "--decision-log-url", srv.URL, "--decision-log-interval", "10ms")

	const address = "ann.secret@example.com"
	meta := `"metadata":{"tenant":"acme","email":"` + address + `"}`
	want := map[string]string{}
	call := func(path, body string, status int, kind string) {
		t.Helper()
		got, answer := d.do(t, "POST", path, body)
		if got != status {
			t.Fatalf("%s: %d %s", path, got, answer)
		}
		want[decisionOf(t, answer)] = kind
	}
	call("/v1/hooks/before_planning", `{"request_id":"m1","request":"quote ACME",`+meta+`}`, 200, "stage")
	call("/v1/hooks/after_planning", `{"request_id":"m1","plan":`+quotePlan+`}`, 200, "stage")
	call("/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"m1","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"ACME"}}}`, 200, "check")
	call("/v1/operations/check", `{"operation":"turn","call":{"request_id":"m2","request":"hi",`+meta+`}}`, 200, "check")
	call("/v1/hooks/after_execution", `{"request_id":"m1","result":{"plan_id":"p1","steps":[],"success":true}}`, 200, "stage")
	call("/v1/hooks/after_synthesis", `{"request_id":"m1","response":"write to `+address+`"}`, 200, "stage")
	call("/v1/hooks/after_planning", `{"request_id":"m3","request":"buy",`+meta+`,"plan":`+tradePlan+`}`, 403, "stage")
	d.stop(t)

	byID, events := logEvents(t, file)
	for id, kind := range want {
		if got := byID[id]; len(got) != 1 || got[0] != kind {
			t.Errorf("decision %s: events %v, want one %s event", id, got, kind)
		}
	}
	if len(events) != len(want) {
		t.Errorf("%d events for %d decisions", len(events), len(want))
	}
	for sink, text := range map[string]string{"file": readText(t, file), "http": endpoint.All(), "log": d.stderr.String()} {
		if strings.Contains(text, address) {
			t.Errorf("the %s sink holds the masked address", sink)
		}
		if !strings.Contains(text, `"tenant":"acme"`) {
			t.Errorf("the %s sink lacks the unmasked tenant", sink)
		}
	}
	if n := strings.Count(d.stderr.String(), `"msg":"stage decision"`); n != 5 {
		t.Errorf("%d stage decision lines, want 5", n)
	}
}

// An HTTP sink nobody answers neither fails nor holds up a decision: every call is
// answered, and the events that did not fit its buffer are counted.
func TestServe_UnreachableDecisionSinkDropsAndCounts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples", "stock-agent"),
		"--decision-log-url", dead, "--decision-log-buffer", "2", "--decision-log-batch", "1", "--log-decisions=false")
	for range 10 {
		if status, body := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"u1","request":"hi"}`); status != 200 {
			t.Fatalf("before_planning with the sink down: %d %s", status, body)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, metrics := d.do(t, "GET", "/metrics", "")
		if line := grepLines(metrics, `agentd_decision_log_dropped_total{`); strings.Contains(line, `reason="buffer_full",sink="http"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no buffer_full drops counted:\n%s", grepLines(metrics, "decision_log"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func grepLines(text, sub string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// The README's decision_log snippet compiles.
func TestREADME_DecisionLogSnippetCompiles(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var snippet string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		if strings.HasPrefix(m[1], "decision_log:") {
			snippet = m[1]
		}
	}
	if snippet == "" {
		t.Fatal("README has no decision_log snippet")
	}
	dir := copyExample(t, "stock-agent")
	writeFile(t, dir, "hooks/40-log.yaml", "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: log}\n"+snippet)
	if code, out, errOut := runCLI(t, "check", dir); code != exitOK {
		t.Fatalf("the README's decision_log snippet does not compile:\n%s%s", out, errOut)
	}
}

// The decision log is an observer of the one driver serve builds, so the OpenAI
// gateway's decisions are logged like the stage API's: a plain answer through the
// gateway is a before_planning and an after_synthesis event of its request.
func TestServe_DecisionLogCoversTheGateway(t *testing.T) {
	file := filepath.Join(t.TempDir(), "decisions.log")
	g := startGateway(t, script(`{"user": "hello", "content": "hi there"}`), "", nil, "--decision-log-file", file)
	_, id := g.complete(t, ask("hello"), option.WithHeader("X-Request-Id", "gw-logged"))
	if status, answer := g.d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"api-logged","request":"quote ACME"}`); status != 200 {
		t.Fatalf("before_planning: %d %s", status, answer)
	}
	g.d.stop(t)
	_, events := logEvents(t, file)
	stages := map[string][]string{}
	for _, e := range events {
		rid, _ := e["request_id"].(string)
		stage, _ := e["stage"].(string)
		stages[rid] = append(stages[rid], stage)
	}
	if got := stages[id]; strings.Join(got, ",") != "before_planning,after_synthesis" {
		t.Errorf("the gateway's request %s logged stages %v, want before_planning and after_synthesis", id, got)
	}
	if got := stages["api-logged"]; len(got) != 1 {
		t.Errorf("the stage API's call logged %v", got)
	}
}

// With --decision-log-format opa, the daemon POSTs gzipped arrays that decode as OPA's
// own decision-log events, labelled with --decision-log-opa-id and agentd's version,
// the generation as the bundle's revision.
func TestServe_OPADecisionLogDecodesAsOPAEvents(t *testing.T) {
	dir := copyExample(t, "stock-agent")
	var mu sync.Mutex
	var events []logs.EventV1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		zr, err := gzip.NewReader(r.Body)
		var batch []logs.EventV1
		if err == nil {
			err = json.NewDecoder(zr).Decode(&batch)
		}
		if err != nil || r.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("a batch OPA would not take (%s): %v", r.Header.Get("Content-Encoding"), err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		events = append(events, batch...)
		mu.Unlock()
	}))
	defer srv.Close()
	d := startDaemon(t, dir, "--decision-log-url", srv.URL, "--decision-log-format", "opa", "--decision-log-opa-id", "replica-7",
		"--decision-log-interval", "10ms", "--log-decisions=false")
	status, answer := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"o1","request":"quote ACME"}`)
	if status != 200 {
		t.Fatalf("before_planning: %d %s", status, answer)
	}
	id := decisionOf(t, answer)
	d.stop(t)
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 {
		t.Fatalf("%d events, want 1", len(events))
	}
	e := events[0]
	if e.DecisionID != id || e.Labels["id"] != "replica-7" || e.Labels["version"] == "" || e.Path != "agentd/stage/before_planning" ||
		e.Bundles["agentd"].Revision == "" || e.Custom["request_id"] != "o1" || e.Result == nil {
		t.Errorf("event = %+v", e)
	}
}
