package config_test

import (
	"bufio"
	"bytes"
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine/diag"
)

// corpusDir holds the invalid configurations. Each case is a config directory with
// want.txt, one `file:line:col kind` line per expected error (written by hand), and
// expected.golden, the rendered diagnostics (rewritten by -update).
const corpusDir = "testdata/invalid"

// corpusSize is the number of cases in the corpus. The corpus only grows: a new case
// raises it, and a case removed (or a directory lost) fails TestLoad_InvalidCorpus.
const corpusSize = 89

// corpusCases returns the names of the case directories, sorted.
func corpusCases(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// readWant returns the non-blank lines of a case's want.txt, sorted.
func readWant(t testing.TB, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "want.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return lines
}

// comparePositions orders errors by file, line and column, as diag.List.Normalize does;
// the too_many_errors summary it appends goes last.
func comparePositions(a, b *diag.Error) int {
	if ta, tb := a.Kind == diag.KindTooManyErrors, b.Kind == diag.KindTooManyErrors; ta != tb {
		if ta {
			return 1
		}
		return -1
	}
	return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
}

// wantKind returns the kind of a want.txt line.
func wantKind(line string) diag.Kind {
	return diag.Kind(line[strings.LastIndexByte(line, ' ')+1:])
}

// TestLoad_InvalidCorpus loads every case and checks that the errors are exactly those
// of want.txt, by file, line, column and kind (never by message), and that the rendered
// diagnostics match expected.golden.
func TestLoad_InvalidCorpus(t *testing.T) {
	cases := corpusCases(t)
	if len(cases) != corpusSize {
		t.Errorf("the corpus has %d cases, want corpusSize = %d (raise it with a new case; never drop one)", len(cases), corpusSize)
	}
	for _, name := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(corpusDir, name)
			want := readWant(t, dir)
			list := loadFails(t, dir)
			if !slices.IsSortedFunc(list, comparePositions) {
				t.Errorf("errors are not sorted by file and position:\n%v", list)
			}
			got := make([]string, len(list))
			for i, e := range list {
				got[i] = position(e)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("errors (file:line:col kind):\n  got  %s\n  want %s\nfull:\n%v",
					strings.Join(got, "\n       "), strings.Join(want, "\n       "), list)
			}
			var buf bytes.Buffer
			list.Render(&buf, dirSource(dir))
			golden(t, filepath.Join(dir, "expected.golden"), buf.Bytes())
		})
	}
}

// TestLoad_InvalidCorpusCoversEveryKind keys the corpus on kind: every kind a load can
// report has a case, and every case expects only known kinds.
func TestLoad_InvalidCorpusCoversEveryKind(t *testing.T) {
	byKind := map[diag.Kind][]string{}
	for _, name := range corpusCases(t) {
		for _, line := range readWant(t, filepath.Join(corpusDir, name)) {
			kind := wantKind(line)
			if !isDiagKind(kind) {
				t.Errorf("%s/want.txt: %q has unknown kind %q", name, line, kind)
			}
			if cases := byKind[kind]; len(cases) == 0 || cases[len(cases)-1] != name {
				byKind[kind] = append(cases, name)
			}
		}
	}
	for _, kind := range diagKinds {
		if len(byKind[kind]) == 0 {
			t.Errorf("no corpus case expects kind %s", kind)
			continue
		}
		t.Logf("%-24s %2d case(s): %s", kind, len(byKind[kind]), strings.Join(byKind[kind], " "))
	}
}
