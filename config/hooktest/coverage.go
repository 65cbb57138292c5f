package hooktest

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
)

// Coverage is the line coverage of the policies, per file (tests left out).
type Coverage struct {
	Files []FileCoverage
	// Covered and NotCovered count lines over every file.
	Covered, NotCovered int
}

// FileCoverage is one policy file's line coverage; NotCoveredLines are the line
// ranges not covered ("44" or "44-46").
type FileCoverage struct {
	File                string
	Covered, NotCovered int
	NotCoveredLines     []string
}

// Percent is the covered share of the lines, 100 when there are none.
func (c *Coverage) Percent() float64 { return percent(c.Covered, c.NotCovered) }

// Percent is the covered share of the file's lines.
func (f FileCoverage) Percent() float64 { return percent(f.Covered, f.NotCovered) }

func percent(covered, notCovered int) float64 {
	if covered+notCovered == 0 {
		return 100
	}
	return 100 * float64(covered) / float64(covered+notCovered)
}

// Print writes one line per file and the total.
func (c *Coverage) Print(w io.Writer) {
	for _, f := range c.Files {
		fmt.Fprintf(w, "coverage %s: %.1f%% (%d of %d lines)", f.File, f.Percent(), f.Covered, f.Covered+f.NotCovered)
		if len(f.NotCoveredLines) > 0 {
			fmt.Fprintf(w, ", not covered: %s", strings.Join(f.NotCoveredLines, ", "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "coverage: %.1f%% (%d of %d lines)\n", c.Percent(), c.Covered, c.Covered+c.NotCovered)
}

// coverage reports cov for the modules that are not tests.
func coverage(cov *cover.Cover, modules map[string]*ast.Module) *Coverage {
	policies := map[string]*ast.Module{}
	for name, m := range modules {
		if !strings.HasSuffix(name, "_test.rego") {
			policies[name] = m
		}
	}
	report := cov.Report(policies)
	out := &Coverage{}
	for _, name := range slices.Sorted(maps.Keys(policies)) {
		fr := report.Files[name]
		f := FileCoverage{File: name}
		if fr != nil {
			f.Covered, f.NotCovered = fr.CoveredLines, fr.NotCoveredLines
			f.NotCoveredLines = lineRanges(fr.NotCovered)
		}
		out.Covered += f.Covered
		out.NotCovered += f.NotCovered
		out.Files = append(out.Files, f)
	}
	return out
}

// lineRanges renders the rows of ranges, merged and sorted: "3", "7-8".
func lineRanges(ranges []cover.Range) []string {
	rows := map[int]bool{}
	for _, r := range ranges {
		for row := r.Start.Row; row <= r.End.Row; row++ {
			rows[row] = true
		}
	}
	var out []string
	sorted := slices.Sorted(maps.Keys(rows))
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		if i == j {
			out = append(out, fmt.Sprint(sorted[i]))
		} else {
			out = append(out, fmt.Sprintf("%d-%d", sorted[i], sorted[j]))
		}
		i = j + 1
	}
	return out
}
