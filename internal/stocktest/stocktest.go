// Package stocktest writes (and loads) copies of examples/stock-agent for tests that
// need the stock configuration with a few edits: a stricter candidate, a shadow, a
// replay target.
package stocktest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
)

// Edit replaces the first Old in File (a path in the configuration) with New.
type Edit struct{ File, Old, New string }

// Stricter forbids the broker's trades, halves the trade limit and denies a trade
// above it where the example holds it for an approval.
var Stricter = []Edit{
	{"data/agentd/allowlist.json", `"broker": ["execute_trade"]`, `"broker": []`},
	{"hooks/20-plan.yaml", "amount) > 10000.0", "amount) > 5000.0"},
	{"hooks/20-plan.yaml", "      effect: require_approval\n", ""},
}

// Dir copies examples/stock-agent (its hooks and data, and the stock policies) to a
// temporary directory of t, applies edits and returns the directory. An edit whose Old
// the file does not hold fails t.
func Dir(t testing.TB, edits ...Edit) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("stocktest: no caller information")
	}
	root := filepath.Join(filepath.Dir(self), "..", "..")
	dir := t.TempDir()
	for dst, src := range map[string]string{
		"hooks":    filepath.Join(root, "examples", "stock-agent", "hooks"),
		"data":     filepath.Join(root, "examples", "stock-agent", "data"),
		"policies": filepath.Join(root, "policies"),
	} {
		if err := os.CopyFS(filepath.Join(dir, dst), os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range edits {
		p := filepath.Join(dir, filepath.FromSlash(e.File))
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), e.Old) {
			t.Fatalf("stocktest: %s: %v, or no %q", e.File, err, e.Old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), e.Old, e.New, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Load loads a copy of examples/stock-agent with edits applied (see Dir) with opts,
// failing t when it does not compile.
func Load(t testing.TB, opts config.Options, edits ...Edit) *config.Generation {
	t.Helper()
	gen, err := config.Load(Dir(t, edits...), opts)
	if err != nil {
		t.Fatal(err)
	}
	return gen
}
