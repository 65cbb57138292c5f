package engine_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The runtime core must stay free of the config, server and file-system layers.
var (
	// forbiddenDirect may not be imported by the core packages' own files (fmt pulls
	// in os transitively, which is fine).
	forbiddenDirect = []string{"os", "io/fs", "io/ioutil", "path/filepath"}
	// forbiddenAnywhere may not appear anywhere in the core's dependency graph.
	forbiddenAnywhere = []string{"gopkg.in/yaml.v3", "go.yaml.in/yaml/v3", "net/http", "github.com/fsnotify/fsnotify",
		"github.com/agentd-dev/agentd/config", "github.com/agentd-dev/agentd/cmd/agentd"}
	corePackages = []string{".", "./op", "./ref"}
)

func goList(t *testing.T, format string, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-f", format}, pkgs...)...).Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	return strings.Fields(string(out))
}

func TestImports_CoreHasNoYAMLHTTPOrFileSystem(t *testing.T) {
	direct := goList(t, `{{join .Imports " "}}`, corePackages...)
	deps := goList(t, `{{join .Deps " "}}`, corePackages...)
	for _, pkg := range direct {
		for _, bad := range forbiddenDirect {
			if pkg == bad {
				t.Errorf("a core package imports %s directly", bad)
			}
		}
	}
	for _, pkg := range deps {
		for _, bad := range forbiddenAnywhere {
			if pkg == bad || strings.HasPrefix(pkg, bad+"/") {
				t.Errorf("a core package depends on %s", pkg)
			}
		}
	}
}
