package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// sessionStep is one step's outcome as tools/mcp/sessions.mjs prints it.
type sessionStep struct {
	OK      bool
	Code    *int
	Tools   int
	Message string
}

// runSessions runs tools/mcp/sessions.mjs (the official TypeScript SDK) against d's
// /mcp with steps, a JSON list, and returns each step's outcome.
func runSessions(t *testing.T, d *daemon, steps string) []sessionStep {
	t.Helper()
	out, err := exec.Command("node", filepath.Join(repoRoot(t), "tools/mcp/sessions.mjs"), d.url+"/mcp", steps).Output()
	if err != nil {
		t.Fatalf("node sessions.mjs: %v\n%s\n--- agentd log ---\n%s", err, out, d.stderr)
	}
	var got struct{ Steps []sessionStep }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("sessions.mjs printed %s: %v", out, err)
	}
	return got.Steps
}

// wantSteps checks each step's outcome: "ok", or the HTTP status the step failed with.
func wantSteps(t *testing.T, got []sessionStep, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d steps, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := "ok"
		if !got[i].OK {
			g = "failed"
			if got[i].Code != nil {
				g = fmt.Sprint(*got[i].Code)
			}
		}
		if g != w {
			t.Errorf("step %d = %s (%+v), want %s", i, g, got[i], w)
		}
	}
}

// The MCP session limits with a client no one here wrote (the TypeScript SDK), two
// tokens against a daemon that allows 3 sessions, 2 per token: a token's third session
// is refused 429, as is a session past the daemon's bound; a session is answered only
// to the token that opened it (another token's call on it is 404, and the session
// goes on); ending a session (DELETE) gives its slot back; and /v1/status shows the
// bounds.
func TestMCPGateway_SessionLimitsWithTheTypeScriptSDK(t *testing.T) {
	requireMCPTools(t)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	writeFile(t, filepath.Dir(tokens), filepath.Base(tokens), "- {token: alice, role: orchestrator}\n- {token: bob, role: orchestrator}\n- {token: admin, role: admin}\n")
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples/mcp-gateway"), "--token-file", tokens,
		"--mcp-max-sessions", "3", "--mcp-max-sessions-per-token", "2")
	got := runSessions(t, d, `[
		{"open": "alice"}, {"open": "alice"}, {"open": "alice"},
		{"open": "bob"}, {"open": "bob"},
		{"list": 0}, {"borrow": 0, "token": "bob"}, {"list": 0},
		{"close": 1}, {"open": "bob"}, {"list": 5}, {"open": "alice"}
	]`)
	wantSteps(t, got,
		"ok", "ok", "429", // alice's third: past her 2
		"ok", "429", // bob's second: the daemon holds 3
		"ok", "404", "ok", // bob on alice's session: none of his; alice's goes on
		"ok", "ok", "ok", "429") // alice ended one, bob took it; the daemon is full again
	_, body := d.do(t, "GET", "/v1/status", "", "Authorization", "Bearer admin")
	var st struct {
		Gateways struct {
			MCP struct {
				Sessions struct {
					Max          int
					MaxPerCaller int    `json:"max_per_caller"`
					IdleTimeout  string `json:"idle_timeout"`
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if s := st.Gateways.MCP.Sessions; s.Max != 3 || s.MaxPerCaller != 2 || s.IdleTimeout == "" {
		t.Errorf("status sessions = %+v, want the bounds 3 and 2: %s", s, body)
	}
}

// A session nobody calls for --mcp-session-idle is closed: the TypeScript SDK's next
// call on it is answered 404, and a new session opens in its slot.
func TestMCPGateway_IdleSessionWithTheTypeScriptSDK(t *testing.T) {
	requireMCPTools(t)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	writeFile(t, filepath.Dir(tokens), filepath.Base(tokens), "- {token: alice, role: orchestrator}\n")
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples/mcp-gateway"), "--token-file", tokens,
		"--mcp-max-sessions-per-token", "1", "--mcp-session-idle", "1s")
	got := runSessions(t, d, `[{"open": "alice"}, {"list": 0}, {"open": "alice"}, {"sleep": 3000}, {"list": 0}, {"open": "alice"}, {"list": 2}]`)
	wantSteps(t, got, "ok", "ok", "429", "ok", "404", "ok", "ok")
}
