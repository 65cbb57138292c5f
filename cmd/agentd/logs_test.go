package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestServe_DecisionLogsLeaveOutPayloadsUnlessAsked: one JSON decision line per stage
// call with request id and generation; request text, metadata and responses appear
// only with --log-payloads.
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
	loud := startDaemon(t, example, "--log-payloads")
	calls(loud)
	loud.stop(t)
	for _, secret := range []string{"secret question", "secret-tenant", "secret answer"} {
		if !strings.Contains(loud.stderr.String(), secret) {
			t.Errorf("payload %q not logged with --log-payloads", secret)
		}
	}
}
