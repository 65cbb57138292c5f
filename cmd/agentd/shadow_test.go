package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stricterExample copies the stock agent with the broker's trades off its allow-list
// and the trade limit halved, and phone numbers no more redacted from answers.
func stricterExample(t *testing.T) string {
	t.Helper()
	dir := copyExample(t, "stock-agent")
	edit(t, filepath.Join(dir, "data", "agentd", "allowlist.json"), `"broker": ["execute_trade"]`, `"broker": []`)
	edit(t, filepath.Join(dir, "hooks", "20-plan.yaml"), "amount) > 10000.0", "amount) > 5000.0")
	edit(t, filepath.Join(dir, "hooks", "20-plan.yaml"), "      effect: require_approval\n", "") // the candidate denies what the live config holds
	edit(t, filepath.Join(dir, "hooks", "30-response.yaml"), "patterns: [email, credit_card, phone]", "patterns: [email, credit_card]")
	return dir
}

func edit(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

const brokerTradePlan = `{"plan_id":"p1","steps":[{"step_id":"step-1","agent_name":"broker","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":8000}}}]}`

// shadowPhone is the draft answer of the quote: the live rules redact its phone
// number, the stricter ones no more.
const shadowPhone = "+1 415 555 0100"

// shadowScript plays one request with a broker trade of 8000 (which the live rules
// allow and the stricter ones do not) and a quote (which both allow) answered with a
// phone number (which only the live rules redact), and returns the answers and the
// trade's record, with decision ids and times taken out.
func shadowScript(t *testing.T, d *daemon) []string {
	t.Helper()
	var out []string
	for _, c := range [][2]string{
		{"/v1/hooks/before_planning", `{"request_id":"s1","request":"buy ACME","metadata":{"tenant":"acme"}}`},
		{"/v1/hooks/after_planning", `{"request_id":"s1","plan":` + brokerTradePlan + `}`},
		{"/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"s1","step_id":"step-1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"amount":8000}}}`},
		{"/v1/hooks/before_planning", `{"request_id":"s2","request":"quote ACME"}`},
		{"/v1/hooks/after_planning", `{"request_id":"s2","plan":` + quotePlan + `}`},
		{"/v1/hooks/after_synthesis", `{"request_id":"s2","response":"182.50 USD; questions: ` + shadowPhone + `"}`},
	} {
		status, body := d.do(t, "POST", c[0], c[1])
		out = append(out, c[0]+" "+strconv.Itoa(status)+" "+body)
	}
	_, rec := d.do(t, "GET", "/v1/executions/s1", "")
	return append(out, rec)
}

var volatileFields = regexp.MustCompile(`"(decision_id|started_at|created_at|updated_at|at|open_until|duration)":("[^"]*"|[0-9]+)`)

// --shadow with a stricter allow-list and a laxer redaction: every answer and the
// record are those of the daemon without it, and the shadow counts the plan and the
// check it would have denied and the answer it would have redacted otherwise, in
// /v1/status, in /metrics and as decision events, naming no answer's text.
func TestServe_ShadowChangesNoAnswerAndCountsDisagreements(t *testing.T) {
	live := filepath.Join(repoRoot(t), "examples", "stock-agent")
	plain := startDaemon(t, live)
	want := shadowScript(t, plain)
	plain.stop(t)
	if synthesis := want[len(want)-2]; !strings.Contains(synthesis, "[REDACTED]") || strings.Contains(synthesis, shadowPhone) {
		t.Fatalf("live after_synthesis answer %s: want the phone number redacted", synthesis)
	}

	shadowDir := stricterExample(t)
	file := filepath.Join(t.TempDir(), "decisions.log")
	d := startDaemon(t, live, "--shadow", shadowDir, "--decision-log-file", file, "--debounce", "20ms")
	got := shadowScript(t, d)
	for i := range want {
		if w, g := volatileFields.ReplaceAllString(want[i], ""), volatileFields.ReplaceAllString(got[i], ""); w != g {
			t.Errorf("with the shadow, answer %d differs:\n got %s\nwant %s", i, g, w)
		}
	}
	status := waitShadow(t, d, func(s shadowStatus) bool { return s.Evaluated+s.Skipped >= 6 })
	if status.Disagreed != 3 || status.Changes["newly_denied"] != 2 || status.Changes["changed"] != 1 || status.Agreed != 3 {
		t.Fatalf("shadow summary %+v: want the trade's plan and check newly denied, the answer changed, the rest agreed", status)
	}
	if r := status.Recent[0]; r["stage"] != "after_synthesis" || r["change"] != "changed" {
		t.Errorf("latest disagreement %v: want the after_synthesis change", r)
	}
	if _, body := d.do(t, "GET", "/v1/status", ""); strings.Contains(body, "REDACTED") {
		t.Errorf("/v1/status holds an answer's text: %s", body)
	}
	_, metrics := d.do(t, "GET", "/metrics", "")
	for _, want := range []string{`agentd_shadow_disagreements_total{change="newly_denied",decision="after_planning"`,
		`agentd_shadow_disagreements_total{change="newly_denied",decision="tool_call"`,
		`agentd_shadow_disagreements_total{change="changed",decision="after_synthesis"`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(metrics, "agentd_shadow"))
		}
	}

	// The shadow directory is watched: with the broker's trades allowed again, a new
	// trade plan agrees.
	edit(t, filepath.Join(shadowDir, "data", "agentd", "allowlist.json"), `"broker": []`, `"broker": ["execute_trade"]`)
	waitShadow(t, d, func(s shadowStatus) bool { return s.Generation != status.Generation })
	d.do(t, "POST", "/v1/hooks/after_planning", `{"request_id":"s3","request":"buy","plan":`+brokerTradePlan+`}`)
	if s := waitShadow(t, d, func(s shadowStatus) bool { return s.Agreed == 4 }); s.Disagreed != 3 {
		t.Fatalf("after the shadow's reload: %+v", s)
	}
	d.stop(t)
	byID, events := logEvents(t, file)
	shadows := 0
	for _, e := range events {
		if e["kind"] == "shadow" {
			shadows++
			if kinds := byID[e["decision_id"].(string)]; len(kinds) != 2 {
				t.Errorf("shadow event of decision %v: that decision has events %v, want its own and the shadow's", e["decision_id"], kinds)
			}
		}
	}
	if shadows != 3 {
		t.Errorf("%d shadow events, want 3", shadows)
	}
	if log, err := os.ReadFile(file); err != nil || strings.Contains(string(log), shadowPhone) {
		t.Errorf("the decision log holds the unredacted draft (%v)", err)
	}
}

type shadowStatus struct {
	Generation string           `json:"generation"`
	Evaluated  int              `json:"evaluated"`
	Agreed     int              `json:"agreed"`
	Disagreed  int              `json:"disagreed"`
	Skipped    int              `json:"skipped"`
	Changes    map[string]int   `json:"changes"`
	Recent     []map[string]any `json:"recent"`
}

// waitShadow polls /v1/status until its shadow summary satisfies ok.
func waitShadow(t *testing.T, d *daemon, ok func(shadowStatus) bool) shadowStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := d.do(t, "GET", "/v1/status", "")
		var st struct {
			Shadow *shadowStatus `json:"shadow"`
		}
		if err := json.Unmarshal([]byte(body), &st); err != nil || st.Shadow == nil {
			t.Fatalf("status without a shadow: %s", body)
		}
		if ok(*st.Shadow) {
			return *st.Shadow
		}
		if time.Now().After(deadline) {
			t.Fatalf("shadow summary never got there: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
