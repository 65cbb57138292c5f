package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWalkthrough_OpenAIGateway runs examples/openai-gateway/walkthrough.sh, unchanged,
// the way its README says: agentd serving the example (with the upstream's key in its
// environment), then the walkthrough, which starts the scripted upstream and runs the
// agent. Only the upstream's port differs from the README's, so that the test never
// collides with anything on the machine: the config is a copy naming a free port, and
// UPSTREAM_ADDR tells the walkthrough.
func TestWalkthrough_OpenAIGateway(t *testing.T) {
	dir := copyExample(t, "openai-gateway")
	addr := freeAddr(t)
	gateway := readFile(t, dir, "hooks/40-gateway.yaml")
	if !strings.Contains(gateway, "http://127.0.0.1:9300/v1") {
		t.Fatal("hooks/40-gateway.yaml no longer names the README's upstream, http://127.0.0.1:9300/v1")
	}
	writeFile(t, dir, "hooks/40-gateway.yaml", strings.Replace(gateway, "127.0.0.1:9300", addr, 1))
	d := startDaemonEnv(t, []string{"UPSTREAM_API_KEY=demo-upstream-key"}, dir)
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "examples", "openai-gateway", "walkthrough.sh"))
	cmd.Env = append(cmd.Environ(), "AGENTD="+d.url, "UPSTREAM_ADDR="+addr)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "walkthrough passed") {
		t.Fatalf("walkthrough failed: %v\n%s\n--- agentd log ---\n%s", err, out, d.stderr)
	}
}
