package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// walkthroughExamples are the examples TestWalkthrough drives; README commands that
// run a walkthrough must name one of them.
var walkthroughExamples = []string{"stock-agent", "retrieval-agent", "mcp-gateway", "mail-agent"}

// TestREADME_CommandsAreExercised runs every agentd and opa command of the README's sh
// blocks, and checks that the others (make targets, walkthroughs) are the ones other
// tests and CI exercise. A command this test does not know fails it.
func TestREADME_CommandsAreExercised(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("README has no sh blocks")
	}
	scratch := t.TempDir()
	for _, b := range blocks {
		for _, line := range strings.Split(b[1], "\n") {
			cmd := strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
			if cmd == "" {
				continue
			}
			t.Run(cmd, func(t *testing.T) { exerciseCommand(t, root, scratch, cmd) })
		}
	}
}

// exerciseCommand runs or checks one README command. agentd commands run in root,
// except those on the directory `agentd init` writes (my-agent), which run in scratch
// so that the repository is left untouched.
func exerciseCommand(t *testing.T, root, scratch, cmd string) {
	fields := strings.Fields(cmd)
	switch {
	case strings.HasPrefix(cmd, "go run ./cmd/agentd "):
		c := exec.Command(binary, fields[3:]...)
		c.Dir = root
		if strings.Contains(cmd, " my-agent") {
			c.Dir = scratch
		}
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	case strings.HasPrefix(cmd, "go tool opa "):
		c := exec.Command("go", fields[1:]...)
		c.Dir = root
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	case cmd == "make run":
		makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(makefile), "EXAMPLE ?= examples/stock-agent") ||
			!strings.Contains(string(makefile), "exec bin/agentd serve --config $(EXAMPLE)") {
			t.Fatal("make run no longer serves examples/stock-agent, which TestWalkthrough exercises")
		}
	case cmd == "make test":
		// .ci/run runs exactly this.
	case len(fields) == 2 && fields[0] == "bash" && strings.HasSuffix(fields[1], "/walkthrough.sh"):
		example := filepath.Base(filepath.Dir(fields[1]))
		for _, e := range walkthroughExamples {
			if e == example {
				return
			}
		}
		t.Fatalf("%s is not run by TestWalkthrough", cmd)
	default:
		t.Fatalf("README command %q is exercised by no test; add it to exerciseCommand", cmd)
	}
}

// TestREADME_EmbeddingSnippetIsTheExample keeps the README's Go snippet a verbatim
// excerpt of the compiled Example.
func TestREADME_EmbeddingSnippetIsTheExample(t *testing.T) {
	root := repoRoot(t)
	readme, _ := os.ReadFile(filepath.Join(root, "README.md"))
	example, _ := os.ReadFile(filepath.Join(root, "engine", "example_test.go"))
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no go block")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		if !strings.Contains(string(example), strings.TrimSpace(line)) {
			t.Errorf("README snippet line not in engine/example_test.go: %s", line)
		}
	}
}

// TestREADME_YAMLSnippetsWork compiles the README's HookSet snippet (with the stock
// example's policies and data) and runs its HookTests snippet against the stock example.
func TestREADME_YAMLSnippetsWork(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var hookSet, hookTests string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		switch {
		case strings.Contains(m[1], "kind: HookSet"):
			hookSet = m[1]
		case strings.Contains(m[1], "kind: HookTests"):
			hookTests = m[1]
		}
	}
	if hookSet == "" || hookTests == "" {
		t.Fatal("README lacks a HookSet or a HookTests snippet")
	}
	dir := copyExample(t, "stock-agent")
	if err := os.RemoveAll(filepath.Join(dir, "hooks")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "hooks/readme.yaml", hookSet)
	if code, _, errOut := runCLI(t, "check", dir); code != exitOK {
		t.Fatalf("README HookSet snippet does not compile:\n%s", errOut)
	}
	dir = copyExample(t, "stock-agent")
	writeFile(t, dir, "tests/readme.yaml", hookTests)
	if code, out, errOut := runCLI(t, "test", dir); code != exitOK {
		t.Fatalf("README HookTests snippet fails:\n%s%s", out, errOut)
	}
}
