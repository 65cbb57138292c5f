package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServe_BadEditKeepsServingThenRecovers edits the config of a watching daemon:
// an invalid edit is refused (status names file:line:col, the old generation keeps
// answering), a fix goes live without a restart.
func TestServe_BadEditKeepsServingThenRecovers(t *testing.T) {
	dir := copyExample(t, "stock-agent")
	d := startDaemon(t, dir, "--debounce", "20ms")
	status := func() (gen, result, errText string) {
		_, body := d.do(t, "GET", "/v1/status", "")
		var st struct {
			Generation string `json:"generation"`
			LastReload struct {
				Result string `json:"result"`
				Error  string `json:"error"`
			} `json:"last_reload"`
		}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatalf("status: %v %s", err, body)
		}
		return st.Generation, st.LastReload.Result, st.LastReload.Error
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\n%s", what, d.stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	first, _, _ := status()
	hook := filepath.Join("hooks", "10-context.yaml")
	writeFile(t, dir, hook, strings.Replace(readFile(t, dir, hook), "'Tenant: ' + string(metadata.tenant)", "'Tenant: ' + plan.steps", 1))
	waitFor("the bad edit to be refused", func() bool { _, result, _ := status(); return result == "error" })
	gen, _, errText := status()
	if gen != first || !strings.Contains(errText, "hooks/10-context.yaml:") || !strings.Contains(errText, "cel_undeclared_variable") {
		t.Fatalf("after a bad edit: generation %s (was %s), error %q", gen, first, errText)
	}
	if code, body := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"r1","request":"q","metadata":{"tenant":"acme"}}`); code != 200 || !strings.Contains(body, `"Tenant: acme"`) {
		t.Fatalf("old generation does not serve: %d %s", code, body)
	}
	writeFile(t, dir, hook, strings.Replace(readFile(t, dir, hook), "'Tenant: ' + plan.steps", "'Customer: ' + string(metadata.tenant)", 1))
	waitFor("the fix to go live", func() bool { gen, result, _ := status(); return result == "ok" && gen != first })
	if code, body := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"r2","request":"q","metadata":{"tenant":"acme"}}`); code != 200 || !strings.Contains(body, `"Customer: acme"`) {
		t.Fatalf("fixed generation does not serve: %d %s", code, body)
	}
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestServe_RefusesAConfigWithoutPlanReview: serve refuses to start on a config without
// a required after_planning hook, naming --allow-no-plan-review, and starts with it.
func TestServe_RefusesAConfigWithoutPlanReview(t *testing.T) {
	dir := copyExample(t, "stock-agent")
	if err := os.Remove(filepath.Join(dir, "hooks", "20-plan.yaml")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "serve", "--config", dir, "--addr", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "--allow-no-plan-review") || !strings.Contains(stderr, "required after_planning hook") {
		t.Fatalf("serve without a plan review: exit %d, %s; want a refusal naming --allow-no-plan-review", code, stderr)
	}
	d := startDaemon(t, dir, "--allow-no-plan-review")
	if code, body := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"r1","request":"q","metadata":{"tenant":"acme"}}`); code != 200 {
		t.Fatalf("before_planning = %d %s", code, body)
	}
}
