package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWalkthrough runs each example's walkthrough.sh, unchanged, against the real
// binary serving that example, the way the examples' READMEs say.
func TestWalkthrough(t *testing.T) {
	for _, example := range walkthroughExamples {
		t.Run(example, func(t *testing.T) {
			if example == "mcp-gateway" {
				requireMCPTools(t) // its upstream is the npm reference server
			}
			dir := filepath.Join(repoRoot(t), "examples", example)
			d := startDaemon(t, dir)
			cmd := exec.Command("bash", filepath.Join(dir, "walkthrough.sh"))
			cmd.Env = append(cmd.Environ(), "AGENTD="+d.url)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "walkthrough passed") {
				t.Fatalf("walkthrough failed: %v\n%s\n--- agentd log ---\n%s", err, out, d.stderr)
			}
		})
	}
}

// TestWalkthrough_VerboseShowsEachExchange: a walkthrough run with -v prints every
// request it sends and every answer, the rejected plan's 403 included.
func TestWalkthrough_VerboseShowsEachExchange(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "examples", "stock-agent")
	d := startDaemon(t, dir)
	cmd := exec.Command("bash", filepath.Join(dir, "walkthrough.sh"), "-v")
	cmd.Env = append(cmd.Environ(), "AGENTD="+d.url)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "walkthrough passed") {
		t.Fatalf("walkthrough -v failed: %v\n%s", err, out)
	}
	for _, want := range []string{"  > POST /v1/hooks/after_planning\n", `        "capability": "execute_trade",`, "  < 403\n", `      "code": "capability_not_allowed",`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("walkthrough -v output lacks %q:\n%s", want, out)
		}
	}
}
