package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordedDay runs a day of traffic on the stock agent: quotes, broker trades of 3,000
// and 8,000 that are checked and finished, and a trade the allow-list rejects. It
// returns the records exported with GET /v1/executions/{id} as a JSON list, and the
// daemon's decision log file; live, when set, is called with the daemon's URL before
// it stops.
func recordedDay(t *testing.T, live func(url string)) (records, decisions string) {
	t.Helper()
	decisions = filepath.Join(t.TempDir(), "decisions.log")
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples", "stock-agent"), "--decision-log-file", decisions, "--log-decisions=false")
	var ids []string
	trade := func(id string, amount int) {
		plan := fmt.Sprintf(`{"plan_id":"p-%s","steps":[{"step_id":"step-1","agent_name":"broker","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":%d}}}]}`, id, amount)
		d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"`+id+`","request":"buy ACME","metadata":{"tenant":"acme"}}`)
		if status, body := d.do(t, "POST", "/v1/hooks/after_planning", `{"request_id":"`+id+`","plan":`+plan+`}`); status != 200 {
			t.Fatalf("%s plan: %d %s", id, status, body)
		}
		check := fmt.Sprintf(`{"operation":"tool_call","call":{"request_id":"%s","step_id":"step-1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"amount":%d}}}`, id, amount)
		if status, body := d.do(t, "POST", "/v1/operations/check", check); status != 200 {
			t.Fatalf("%s check: %d %s", id, status, body)
		}
		d.do(t, "POST", "/v1/operations/finish", `{"request_id":"`+id+`","step_id":"step-1","status":"succeeded"}`)
		ids = append(ids, id)
	}
	quote := func(id string) {
		d.do(t, "POST", "/v1/hooks/after_planning", `{"request_id":"`+id+`","request":"quote","plan":`+quotePlan+`}`)
		d.do(t, "POST", "/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"`+id+`","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":{"symbol":"ACME"}}}`)
		ids = append(ids, id)
	}
	quote("q-1")
	trade("t-small", 3000)
	trade("t-big", 8000)
	quote("q-2")
	if status, _ := d.do(t, "POST", "/v1/hooks/after_planning", `{"request_id":"t-refused","request":"buy","plan":`+tradePlan+`}`); status != 403 {
		t.Fatalf("a stock-service trade answered %d, want 403", status)
	}
	ids = append(ids, "t-refused")
	var list []string
	for _, id := range ids {
		status, body := d.do(t, "GET", "/v1/executions/"+id, "")
		if status != 200 {
			t.Fatalf("record %s: %d %s", id, status, body)
		}
		list = append(list, strings.TrimSpace(body))
	}
	if live != nil {
		live(d.url)
	}
	d.stop(t)
	records = filepath.Join(t.TempDir(), "records.json")
	if err := os.WriteFile(records, []byte("["+strings.Join(list, ",")+"]"), 0o600); err != nil {
		t.Fatal(err)
	}
	return records, decisions
}

// agentd replay of a recorded day against a stricter candidate lists the newly denied
// requests and exits 1, from the daemon's records list, the exported records and the
// decision log alike; against the live config itself nothing changes and it exits 0.
func TestReplay_RecordedDayAgainstAStricterCandidate(t *testing.T) {
	strict := stricterExample(t)
	var fromDaemon string
	records, decisions := recordedDay(t, func(url string) {
		code, out, errOut := runCLI(t, "replay", "--config", strict, "--records", url)
		if code != exitFailed {
			t.Fatalf("replay of the daemon's records: exit %d, want 1\n%s%s", code, out, errOut)
		}
		fromDaemon = out
	})
	if !strings.Contains(fromDaemon, "3 newly denied, 0 newly allowed, 0 changed") {
		t.Errorf("replay of the daemon's records lacks the 3 newly denied decisions:\n%s", fromDaemon)
	}
	for name, src := range map[string]string{"records": records, "decision log": decisions} {
		code, out, errOut := runCLI(t, "replay", "--config", strict, "--records", src)
		if code != exitFailed {
			t.Fatalf("%s: exit %d, want 1\n%s%s", name, code, out, errOut)
		}
		for _, want := range []string{
			"request t-small: after_planning phase 1", "request t-big: after_planning phase 1",
			"request t-big: tool_call step-1 (execute_trade)", "allowed -> denied trade_limit",
			"3 newly denied, 0 newly allowed, 0 changed",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", name, want, out)
			}
		}
		for _, unchanged := range []string{"request q-1", "request q-2", "request t-refused", "request t-small: tool_call"} {
			if strings.Contains(out, unchanged) {
				t.Errorf("%s: %s is listed as changed:\n%s", name, unchanged, out)
			}
		}
		if code, out, _ := runCLI(t, "replay", "--config", strict, "--records", src, "--allow-changes"); code != exitOK {
			t.Errorf("%s with --allow-changes: exit %d\n%s", name, code, out)
		}
	}
	live := copyExample(t, "stock-agent")
	if code, out, errOut := runCLI(t, "replay", "--config", live, "--records", records, "--records", decisions); code != exitOK || !strings.Contains(out, "0 newly denied, 0 newly allowed, 0 changed") {
		t.Fatalf("against the live config: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := runCLI(t, "replay", "--records", records); code != exitUsage {
		t.Errorf("replay without --config: exit %d, want 2", code)
	}
	if code, _, errOut := runCLI(t, "replay", "--config", live, "--records", filepath.Join(t.TempDir(), "none.json")); code != exitFailed || !strings.Contains(errOut, "none.json") {
		t.Errorf("replay of a missing file: exit %d %s", code, errOut)
	}
}
