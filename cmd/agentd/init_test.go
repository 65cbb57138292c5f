package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeCommands returns the commands of the first sh block of a README, comments cut.
func readmeCommands(t *testing.T, readme string) []string {
	t.Helper()
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme)
	if block == nil {
		t.Fatalf("the README has no sh block:\n%s", readme)
	}
	var cmds []string
	for _, line := range strings.Split(block[1], "\n") {
		if cmd := strings.TrimSpace(strings.SplitN(line, "#", 2)[0]); cmd != "" {
			cmds = append(cmds, cmd)
		}
	}
	return cmds
}

// The project init writes is one's own (nothing of the stock example in it) and works
// the way its README says: each command of its README, run in it, passes, its serve
// command serves it (a plan reviewed, a call checked), and the Go toolchain's OPA
// passes its Rego tests.
func TestInit_WritesAProjectOfOnesOwnThatRunsAsItsReadmeSays(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my-agent")
	if code, out, errOut := runCLI(t, "init", dir); code != exitOK || !strings.Contains(out, "README.md") {
		t.Fatalf("init: exit %d:\n%s%s", code, out, errOut)
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(p, string(filepath.Separator)+"schemas"+string(filepath.Separator)) {
			return err
		}
		data, err := os.ReadFile(p)
		if strings.Contains(strings.ToLower(string(data)), "stock") || strings.Contains(string(data), "policies/agentd") {
			t.Errorf("%s is the stock example's, not a project of one's own", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeCommands(t, string(readme))
	served := false
	for _, cmd := range cmds {
		args := strings.Fields(cmd)
		if args[0] != "agentd" {
			t.Fatalf("README command %q is not an agentd command", cmd)
		}
		if cmd == "agentd serve --config ." {
			served = true
			continue // below, once the others passed
		}
		c := exec.Command(binary, args[1:]...)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("README command %q in the project: %v\n%s", cmd, err, out)
		}
	}
	if len(cmds) < 5 || !served {
		t.Fatalf("the README's commands %q lack check, test, opa test, probe or serve", cmds)
	}
	c := exec.Command("go", "tool", "opa", "test", filepath.Join(dir, "policies"), filepath.Join(dir, "data"))
	c.Dir = repoRoot(t)
	if out, err := c.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Errorf("go tool opa test on the project: %v\n%s", err, out)
	}

	d := startDaemon(t, dir)
	step := func(id, capability, params string) string {
		return `{"step_id":"` + id + `","agent_name":"notes","namespace":"my-tools","instruction":"x","metadata":{"capability":"` + capability + `","parameters":` + params + `}}`
	}
	for _, c := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/v1/hooks/before_planning", `{"request_id":"r1","request":"find my notes"}`, 200, ""},
		{"/v1/hooks/after_planning", `{"request_id":"r1","plan":{"plan_id":"p1","steps":[` + step("step-1", "search_notes", `{"query":"q","limit":80}`) + `]}}`, 200, `"step-1"`},
		{"/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"r1","step_id":"step-1","namespace":"my-tools","agent_name":"notes","capability":"search_notes","parameters":{"query":"q","limit":80}}}`, 403, `"code":"limit_too_high"`},
		{"/v1/hooks/before_planning", `{"request_id":"r2","request":"delete my notes"}`, 200, ""},
		{"/v1/hooks/after_planning", `{"request_id":"r2","plan":{"plan_id":"p2","steps":[` + step("step-1", "delete_note", `{"id":"n"}`) + `]}}`, 403, `capability_not_allowed`},
	} {
		if status, body := d.do(t, "POST", c.path, c.body); status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("POST %s to the served project = %d %s, want %d with %s", c.path, status, body, c.status, c.want)
		}
	}
	if status, _ := d.do(t, "GET", "/readyz", ""); status != http.StatusOK {
		t.Errorf("GET /readyz = %d", status)
	}
}

// --example stock writes the stock-trading starter, which passes check --strict, test
// with full coverage, probe and opa test.
func TestInit_ExampleStock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "stock")
	if code, out, errOut := runCLI(t, "init", "--example", "stock", dir); code != exitOK || !strings.Contains(out, "stock example") {
		t.Fatalf("init --example stock: exit %d:\n%s%s", code, out, errOut)
	}
	for _, f := range []string{"hooks/20-plan.yaml", "policies/agentd/plan/plan.rego", "data/agentd/allowlist.json", "schemas/hookset.schema.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the stock example lacks %s: %v", f, err)
		}
	}
	for _, args := range [][]string{{"check", "--strict", dir}, {"test", "--min-coverage", "100", dir}, {"probe", dir}} {
		if code, out, errOut := runCLI(t, args...); code != exitOK {
			t.Errorf("agentd %v: exit %d:\n%s%s", args, code, out, errOut)
		}
	}
	cmd := exec.Command(binary, "opa", "test", "policies/", "data/")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("agentd opa test in the stock example: %v\n%s", err, out)
	}
}

// init refuses, with exit 2, a clear message and nothing written, a directory that is
// not empty and an example it does not know.
func TestInit_Refusals(t *testing.T) {
	full := t.TempDir()
	writeFile(t, full, "notes.txt", "mine")
	before := snapshot(t, full)
	fresh := filepath.Join(t.TempDir(), "new")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"non-empty directory", []string{"init", full}, full + " is not empty; init never overwrites files"},
		{"non-empty directory, an example", []string{"init", "--example", "stock", full}, "is not empty"},
		{"unknown example", []string{"init", "--example", "travel", fresh}, `--example "travel" is unknown (known: stock)`},
		{"no directory", []string{"init"}, "usage: agentd init"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code, out, errOut := runCLI(t, c.args...); code != exitUsage || !strings.Contains(errOut, c.want) {
				t.Errorf("agentd %v: exit %d, want %d with %q:\n%s%s", c.args, code, exitUsage, c.want, out, errOut)
			}
		})
	}
	if snapshot(t, full) != before {
		t.Error("init changed a directory that was not empty")
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("init with an unknown example wrote %s: %v", fresh, err)
	}
}
