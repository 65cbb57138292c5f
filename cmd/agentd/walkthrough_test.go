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
