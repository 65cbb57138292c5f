package builtin_test

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/agentd-dev/agentd/builtin"
)

var update = flag.Bool("update", false, "rewrite the action table in ../README.md")

const (
	readmePath   = "../README.md"
	actionsBegin = "<!-- actions:begin -->"
	actionsEnd   = "<!-- actions:end -->"
)

// The README's action table is builtin.Table(), between the actions markers. With
// -update the test rewrites that block and nothing else.
func TestREADME_ActionTable(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	begin := bytes.Index(readme, []byte(actionsBegin))
	end := bytes.Index(readme, []byte(actionsEnd))
	if begin < 0 || end < begin || bytes.Count(readme, []byte(actionsBegin)) != 1 || bytes.Count(readme, []byte(actionsEnd)) != 1 {
		t.Fatalf("%s must hold %s and then %s, once each", readmePath, actionsBegin, actionsEnd)
	}
	begin += len(actionsBegin)
	want := "\n" + builtin.Table()
	if string(readme[begin:end]) == want {
		return
	}
	if !*update {
		t.Fatalf("the action table in %s is stale; run go test ./builtin -run TestREADME_ActionTable -update\n got:\n%s\nwant:\n%s", readmePath, readme[begin:end], want)
	}
	var out bytes.Buffer
	out.Write(readme[:begin])
	out.WriteString(want)
	out.Write(readme[end:])
	if err := os.WriteFile(readmePath, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote the action table in %s", readmePath)
}
