package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSemantics_CitationsResolve: in every file of the repository that cites
// docs/semantics.md, each §N or §N.M names a section the page has, so a reader can
// follow every reference.
func TestSemantics_CitationsResolve(t *testing.T) {
	page, err := os.ReadFile("semantics.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^##+ (\d+(?:\.\d+)?)\.? `).FindAllStringSubmatch(string(page), -1) {
		sections[m[1]] = true
	}
	if !sections["2.4"] || !sections["9"] {
		t.Fatalf("semantics.md sections not found: %v", sections)
	}
	cite := regexp.MustCompile(`§(\d+(?:\.\d+)?)`)
	citing := 0
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name != ".." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".rego":
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(data)
		if !strings.Contains(text, "semantics.md") {
			return nil
		}
		citing++
		for i, line := range strings.Split(text, "\n") {
			for _, m := range cite.FindAllStringSubmatch(line, -1) {
				if !sections[m[1]] {
					t.Errorf("%s:%d cites §%s, which docs/semantics.md does not have", path, i+1, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if citing < 10 {
		t.Fatalf("only %d files cite docs/semantics.md; is the walk reading the repository?", citing)
	}
}
