package main

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A mask on a step's parameter in the real daemon hides it in every copy the request's
// events carry (the plan, the accepted plan, the check's call, the result's steps), in
// both formats: the agentd JSON lines of the file and the OPA events of the endpoint.
func TestServe_StepParameterMaskCoversEveryCopy(t *testing.T) {
	dir := copyExample(t, "stock-agent")
	writeFile(t, dir, "hooks/40-log.yaml", "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: log}\ndecision_log:\n  mask: ['plan.steps[*].metadata.parameters.account']\n")
	var mu sync.Mutex
	var opa strings.Builder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Errorf("an OPA batch that is not gzipped: %v", err)
			return
		}
		data, _ := io.ReadAll(zr)
		mu.Lock()
		opa.Write(data)
		mu.Unlock()
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "decisions.log")
	d := startDaemon(t, dir, "--log-payloads", "--decision-log-file", file, "--decision-log-url", srv.URL,
		"--decision-log-format", "opa", "--decision-log-opa-id", "r1", "--decision-log-interval", "10ms")

	const account = "DE-ACCOUNT-4242"
	params := `{"symbol":"ACME","account":"` + account + `"}`
	for _, c := range []struct{ path, body string }{
		{"/v1/hooks/before_planning", `{"request_id":"k1","request":"quote ACME","metadata":{"tenant":"acme"}}`},
		{"/v1/hooks/after_planning", `{"request_id":"k1","plan":{"plan_id":"p1","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote","metadata":{"capability":"stock_quote","parameters":` + params + `}}]}}`},
		{"/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"k1","step_id":"step-1","namespace":"demo-tools","agent_name":"stock-service","capability":"stock_quote","parameters":` + params + `}}`},
		{"/v1/hooks/after_execution", `{"request_id":"k1","result":{"plan_id":"p1","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","capability":"stock_quote","parameters":` + params + `,"success":true}],"success":true}}`},
	} {
		if status, answer := d.do(t, "POST", c.path, c.body); status != 200 {
			t.Fatalf("%s: %d %s", c.path, status, answer)
		}
	}
	d.stop(t)
	mu.Lock()
	defer mu.Unlock()
	for sink, text := range map[string]string{"file": readText(t, file), "opa": opa.String(), "log": d.stderr.String()} {
		if strings.Contains(text, account) {
			t.Errorf("the %s sink holds the masked account:\n%s", sink, text)
		}
		if n := strings.Count(text, `"symbol":"ACME"`); n < 4 {
			t.Errorf("the %s sink holds %d symbols, want the 4 copies no mask names (plan, accepted plan, call, result)", sink, n)
		}
	}
	for _, copyPath := range []string{"accepted_plan.steps.*.metadata.parameters.account", "call.parameters.account", "result.steps.*.parameters.account"} {
		if !strings.Contains(opa.String(), copyPath) {
			t.Errorf("no OPA event names the copy %s it masked", copyPath)
		}
	}
}
