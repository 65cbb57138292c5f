package op_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPackage_ImportsOnlyStandardLibrary keeps op a leaf: no other package of this
// module, no third-party code, and nothing that reaches files, the network or YAML.
func TestPackage_ImportsOnlyStandardLibrary(t *testing.T) {
	forbidden := map[string]bool{"os": true, "io/fs": true, "path/filepath": true, "net": true, "net/http": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") || forbidden[path] || strings.Contains(path, "yaml") {
				t.Errorf("%s imports %q", name, path)
			}
		}
	}
}
