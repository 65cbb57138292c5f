package report

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestChartIsSVGWithOneBarPerRatio(t *testing.T) {
	bars := []Bar{
		{Label: "throughput <known shape>", Ratio: 2.4, Goal: 2, HigherIsBetter: true},
		{Label: "CPU per request", Ratio: 3.1, Goal: 2},
		{Label: "latency", Ratio: 0.7},
	}
	svg := Chart("agentd & peers", bars)
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	rects := map[string]int{}
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed XML: %v\n%s", err, svg)
			}
			break
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "rect" {
			for _, a := range el.Attr {
				if a.Name.Local == "fill" {
					rects[a.Value]++
				}
			}
		}
	}
	// The background, then one green (met), one red (missed), one grey (no goal).
	if rects["white"] != 1 || rects["#2e7d32"] != 1 || rects["#c62828"] != 1 || rects["#9e9e9e"] != 1 {
		t.Errorf("bars by colour = %v", rects)
	}
	for _, want := range []string{"2.4×", "3.1×", "0.7×", "&lt;known shape&gt;", ">1×<"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}

func TestBarMet(t *testing.T) {
	for _, c := range []struct {
		b    Bar
		want bool
	}{
		{Bar{Ratio: 2, Goal: 2, HigherIsBetter: true}, true},
		{Bar{Ratio: 1.9, Goal: 2, HigherIsBetter: true}, false},
		{Bar{Ratio: 1.9, Goal: 2}, true},
		{Bar{Ratio: 2.1, Goal: 2}, false},
		{Bar{Ratio: 5}, false},
	} {
		if got := c.b.Met(); got != c.want {
			t.Errorf("%+v.Met() = %v", c.b, got)
		}
	}
}
