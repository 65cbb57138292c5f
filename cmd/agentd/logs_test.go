package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServe_DecisionLogsLeaveOutPayloadsUnlessAsked: one JSON decision line per stage
// call with request id and generation; request text, metadata and responses appear
// only with --log-payloads; none above --log-level info.
func TestServe_DecisionLogsLeaveOutPayloadsUnlessAsked(t *testing.T) {
	example := filepath.Join(repoRoot(t), "examples", "stock-agent")
	calls := func(d *daemon) {
		d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"log-1","request":"secret question","metadata":{"tenant":"secret-tenant"}}`)
		d.do(t, "POST", "/v1/hooks/after_synthesis", `{"request_id":"log-1","response":"secret answer"}`)
	}
	quiet := startDaemon(t, example)
	calls(quiet)
	quiet.stop(t)
	log := quiet.stderr.String()
	if n := strings.Count(log, `"msg":"stage decision"`); n != 2 || !strings.Contains(log, `"request_id":"log-1"`) || !strings.Contains(log, `"generation":"g-`) {
		t.Fatalf("want 2 decision lines with request id and generation, got %d:\n%s", n, log)
	}
	for _, secret := range []string{"secret question", "secret-tenant", "secret answer"} {
		if strings.Contains(log, secret) {
			t.Errorf("payload %q logged without --log-payloads", secret)
		}
	}
	warn := startDaemon(t, example, "--log-level", "warn", "--log-payloads")
	calls(warn)
	warn.stop(t)
	if strings.Contains(warn.stderr.String(), `"msg":"stage decision"`) {
		t.Errorf("decision lines at --log-level warn:\n%s", warn.stderr.String())
	}
	loud := startDaemon(t, example, "--log-payloads")
	calls(loud)
	loud.stop(t)
	for _, secret := range []string{"secret question", "secret-tenant", "secret answer"} {
		if !strings.Contains(loud.stderr.String(), secret) {
			t.Errorf("payload %q not logged with --log-payloads", secret)
		}
	}
}

// TestHardening_ErrorLogsLeaveOutRequestText: a fail-open hook whose expression fails on
// the request text (a CEL lookup keyed by it, a Rego built-in parsing it) logs its
// failure without that text unless --log-payloads.
func TestHardening_ErrorLogsLeaveOutRequestText(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"hooks", "data"} {
		if err := os.CopyFS(filepath.Join(dir, sub), os.DirFS(filepath.Join(repoRoot(t), "examples", "stock-agent", sub))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(dir, "policies"), os.DirFS(filepath.Join(repoRoot(t), "policies"))); err != nil {
		t.Fatal(err)
	}
	leak := `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: leaky}
hooks:
  - name: lookup-by-text
    stage: before_planning
    steps:
      - enrich: {key: k, value: "string(metadata[request])"}
  - name: parse-text
    stage: after_planning
    steps:
      - rego: {query: data.leaky.plan}
`
	policy := "package leaky\n\nplan := {\"deny\": {x | x := to_number(input.request)}}\n"
	if err := os.WriteFile(filepath.Join(dir, "hooks", "15-leaky.yaml"), []byte(leak), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "policies", "agentd", "leaky.rego"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	calls := func(d *daemon) {
		d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"leak-1","request":"SECRET-QUESTION","metadata":{"tenant":"acme"}}`)
		d.do(t, "POST", "/v1/hooks/after_planning", `{"request_id":"leak-1","plan":`+quotePlan+`}`)
	}
	quiet := startDaemon(t, dir)
	calls(quiet)
	quiet.stop(t)
	log := quiet.stderr.String()
	for _, hook := range []string{"lookup-by-text", "parse-text"} {
		if !strings.Contains(log, `"hook":"`+hook+`"`) {
			t.Errorf("no failure logged for hook %s:\n%s", hook, log)
		}
	}
	if strings.Contains(log, "SECRET-QUESTION") {
		t.Errorf("request text logged without --log-payloads:\n%s", log)
	}
	loud := startDaemon(t, dir, "--log-payloads")
	calls(loud)
	loud.stop(t)
	if !strings.Contains(loud.stderr.String(), "SECRET-QUESTION") {
		t.Errorf("request text not logged with --log-payloads")
	}
}
