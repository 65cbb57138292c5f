package diag

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var renderSources = map[string]string{
	"hooks/cache.yaml": "hooks:\n  - name: cache\n    stgae: before_planning\n",
	"hooks/tabs.yaml":  "x:\n\t\tvalue: \"a\" +\t1\n",
	"hooks/utf8.yaml":  "when: \"héllo\" == 1\r\n",
	"hooks/cr.yaml":    "a: 1\rb: 2\r\nc: [\r",
}

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		list List
	}{
		{"caret", List{
			e("hooks/cache.yaml", 3, 5, KindSchema, `additional property "stgae" is not allowed`),
		}},
		{"tabs", List{
			e("hooks/tabs.yaml", 2, 14, KindCELTypeCheck, "no matching overload for '_+_'"),
		}},
		{"utf8", List{
			e("hooks/utf8.yaml", 1, 16, KindCELTypeCheck, "no matching overload for '_==_'"),
		}},
		{"line_endings", List{ // a lone CR ends a line, as it does for YAML; CRLF is one ending
			e("hooks/cr.yaml", 2, 4, KindInvalidValue, "the second line"),
			e("hooks/cr.yaml", 3, 4, KindYAMLSyntax, "the third line"),
			e("hooks/cr.yaml", 4, 1, KindYAMLSyntax, "the empty last line"),
		}},
		{"positions", List{
			e("hooks/cache.yaml", 2, 0, KindDuplicateHook, "no column: line only"),
			e("hooks/cache.yaml", 2, 99, KindInvalidValue, "column past the end"),
			e("hooks/cache.yaml", 9, 1, KindYAMLSyntax, "line out of range"),
			e("hooks/missing.yaml", 1, 1, KindIO, "no source"),
			e("", 0, 0, KindTooManyErrors, "too many errors: 3 more not shown"),
		}},
	}
	source := func(file string) ([]byte, bool) {
		s, ok := renderSources[file]
		return []byte(s), ok
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.list.Render(&buf, source)
			golden(t, filepath.Join("testdata", tt.name+".golden"), buf.Bytes())
		})
	}
}

func TestRenderWithoutSource(t *testing.T) {
	var buf bytes.Buffer
	List{e("a.yaml", 1, 1, KindIO, "x")}.Render(&buf, nil)
	if got, want := buf.String(), "a.yaml:1:1: io: x\n"; got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s mismatch (run go test -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
	}
}
