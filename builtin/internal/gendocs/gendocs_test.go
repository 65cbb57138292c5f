package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentd-dev/agentd/builtin"
)

var (
	schemaPath = filepath.Join("..", "..", "..", "schemas", "hookset.schema.json")
	readmePath = filepath.Join("..", "..", "..", "README.md")
)

// The generated files are what the generator writes from the registry, byte for byte.
func TestGenerated_UpToDate(t *testing.T) {
	for _, o := range outputs(schemaPath, readmePath) {
		t.Run(filepath.Base(o.path), func(t *testing.T) {
			current := readFile(t, o.path)
			want, err := o.regen(current)
			if err != nil {
				t.Fatal(err)
			}
			if line, got, w := firstDiff(current, want); line > 0 {
				t.Errorf("%s is stale (run go generate ./builtin); line %d is\n  %s\nwant\n  %s", o.path, line, got, w)
			}
		})
	}
}

// firstDiff returns the first line (1-based) where a and b differ, with both versions
// of it; 0 when they are equal.
func firstDiff(a, b []byte) (int, string, string) {
	if bytes.Equal(a, b) {
		return 0, "", ""
	}
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range max(len(al), len(bl)) {
		x, y := lineAt(al, i), lineAt(bl, i)
		if x != y {
			return i + 1, x, y
		}
	}
	return len(al), "", ""
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}

// Every declared default is valid under the schema generated for its param, so the
// schema never contradicts what an absent param means.
func TestActionDefs_DefaultsAreValid(t *testing.T) {
	schema, err := spliceSchema(readFile(t, schemaPath))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://agentd.dev/schemas/hookset.schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range builtin.Names() {
		spec, _ := builtin.Lookup(name)
		for _, p := range spec.Params {
			if p.Default == nil {
				continue
			}
			n++
			s, err := c.Compile(url + "#/$defs/action." + name + "/properties/" + p.Name)
			if err != nil {
				t.Fatalf("%s.%s: %v", name, p.Name, err)
			}
			if err := s.Validate(jsonDefault(p.Default)); err != nil {
				t.Errorf("%s.%s: default %v: %v", name, p.Name, p.Default, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no param declares a default")
	}
}

// spliceSchema replaces the generated $defs members and keeps every other byte.
func TestSpliceSchema(t *testing.T) {
	const before = "{\n  \"title\": \"x\",\n  \"$defs\": {\n    \"cel\": {\"type\":   \"string\"},\n    "
	const after = "\n  },\n  \"properties\": {\"step\": {\"$ref\": \"#/$defs/step\"}}\n}\n"
	tests := []struct {
		name, schema, err string
	}{
		{"generated members replaced", before + `"step": {}, "action.old": {"x": 1}` + after, ""},
		{"a member between them", before + `"step": {}, "hand": {}, "action.x": {}` + after, `"action.x" is apart`},
		{"no generated member", before + `"hand": {}` + after, "no step or action.* member"},
		{"no $defs", `{"title": "x"}`, "no top-level $defs"},
		{"not an object", `[]`, "want an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := spliceSchema([]byte(tt.schema))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := string(out)
			if !strings.HasPrefix(s, before+`"step": {`) || !strings.HasSuffix(s, "}"+after) {
				t.Errorf("hand-written bytes changed:\n%s", s)
			}
			if strings.Contains(s, "action.old") || !strings.Contains(s, `"action.enrich": {`) {
				t.Errorf("generated members not replaced:\n%s", s)
			}
		})
	}
}

// The table has one row per action, in name order, each with four cells.
func TestTable_RowPerAction(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(table(), "\n"), "\n")
	if len(lines) != 2+len(builtin.Names()) {
		t.Fatalf("table has %d lines, want a header, a rule and %d rows", len(lines), len(builtin.Names()))
	}
	for i, name := range builtin.Names() {
		row := lines[2+i]
		if !strings.HasPrefix(row, "| `"+name+"` | ") || !strings.HasSuffix(row, " |") {
			t.Errorf("row %d = %q, want the row of %s", i, row, name)
		}
		// An unescaped | inside a cell would add a column.
		if cells := strings.Count(strings.ReplaceAll(row, `\|`, ""), "|"); cells != 5 {
			t.Errorf("row of %s has %d separators, want 5: %s", name, cells, row)
		}
	}
}

func TestSpliceTable_NeedsTheMarkersOnce(t *testing.T) {
	for _, readme := range []string{"", actionsEnd + actionsBegin, actionsBegin + actionsEnd + actionsEnd} {
		if _, err := spliceTable([]byte(readme)); err == nil {
			t.Errorf("spliceTable(%q) succeeded", readme)
		}
	}
	out, err := spliceTable([]byte("a\n" + actionsBegin + "\nold\n" + actionsEnd + "\nb\n"))
	if err != nil || string(out) != "a\n"+actionsBegin+"\n"+table()+actionsEnd+"\nb\n" {
		t.Errorf("spliceTable = %q, %v", out, err)
	}
}

func TestDefaultText(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{"set", "`set`"},
		{"\n", "`\"\\n\"`"},
		{"…", "`…`"},
		{65536, "`65536`"},
		{true, "`true`"},
		{10 * time.Minute, "`10m`"},
		{2 * time.Hour, "`2h`"},
		{90 * time.Second, "`1m30s`"},
		{250 * time.Millisecond, "`250ms`"},
	}
	for _, tt := range tests {
		if got := defaultText(tt.v); got != tt.want {
			t.Errorf("defaultText(%v) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
