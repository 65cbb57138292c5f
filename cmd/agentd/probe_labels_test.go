package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentd probe over the mail-agent example tries its label sets and finds nothing; with
// the egress guard naming a label the config does not declare, the guards' label rules
// never fire, which is a finding (exit 1).
func TestCLI_ProbeTriesLabelSets(t *testing.T) {
	dir := copyExample(t, "mail-agent")
	code, out, errOut := runCLI(t, "probe", dir)
	if code != exitOK || !strings.Contains(out, "seeds repeated under the label sets [secret] [untrusted] [secret, untrusted]") {
		t.Fatalf("probe mail-agent: exit %d:\n%s%s", code, out, errOut)
	}
	hooks := filepath.Join(dir, "hooks", "10-flow.yaml")
	data, err := os.ReadFile(hooks)
	if err != nil {
		t.Fatal(err)
	}
	misspelled := strings.Replace(string(data), `"'secret' in labels`, `"'secrets' in labels`, 1)
	if misspelled == string(data) {
		t.Fatal("the example's egress guard no longer reads 'secret' in labels")
	}
	writeFile(t, dir, "hooks/10-flow.yaml", misspelled)
	code, out, errOut = runCLI(t, "probe", dir)
	if code != exitFailed || strings.Count(out, "FINDING labels (") != 1 || !strings.Contains(out, "FINDING labels (guards): the guards read") {
		t.Fatalf("probe with a misspelled label: exit %d, want 1 with one label finding for the guards:\n%s%s", code, out, errOut)
	}
}
