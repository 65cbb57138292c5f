package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Bar is one ratio of the chart: agentd's figure over a peer's.
type Bar struct {
	Label string
	// Ratio is agentd ÷ peer.
	Ratio float64
	// Goal is the ratio the issue asks for, 0 when none is set.
	Goal float64
	// HigherIsBetter says which side of Goal meets it (throughput: higher; CPU time
	// and latency: lower).
	HigherIsBetter bool
}

// Met reports whether the bar meets its goal; false when it has none.
func (b Bar) Met() bool {
	if b.Goal == 0 {
		return false
	}
	if b.HigherIsBetter {
		return b.Ratio >= b.Goal
	}
	return b.Ratio <= b.Goal
}

// Chart geometry, in SVG user units.
const (
	chartLabelWidth = 470.0
	chartPlotWidth  = 420.0
	chartRight      = 70.0
	chartRow        = 22.0
	chartTop        = 56.0
	chartBottom     = 50.0
)

// Chart renders bars as an SVG document: one horizontal bar per ratio on a log₂ axis,
// drawn from parity (1×) to the ratio, green when it meets its goal, red when it
// misses it and grey when none is set; a dashed tick marks the goal.
func Chart(title string, bars []Bar) []byte {
	lo, hi := 0.5, 2.0
	for _, b := range bars {
		if b.Ratio > 0 {
			lo, hi = math.Min(lo, b.Ratio), math.Max(hi, b.Ratio)
		}
		if b.Goal > 0 {
			lo, hi = math.Min(lo, b.Goal), math.Max(hi, b.Goal)
		}
	}
	lo, hi = math.Floor(math.Log2(lo)), math.Ceil(math.Log2(hi))
	x := func(r float64) float64 {
		return chartLabelWidth + (math.Log2(r)-lo)/(hi-lo)*chartPlotWidth
	}
	width := chartLabelWidth + chartPlotWidth + chartRight
	height := chartTop + chartRow*float64(len(bars)) + chartBottom
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="8" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	p(`<text x="8" y="40" fill="#555">agentd ÷ peer, log scale; bars run from parity (1×); green meets the goal, red misses it, grey has none; dashed tick: the goal; ↑ higher is better, ↓ lower is better</text>` + "\n")
	bottom := chartTop + chartRow*float64(len(bars))
	every := math.Ceil((hi - lo) / 8) // at most about 8 axis labels
	for e := lo; e <= hi; e++ {
		r := math.Exp2(e)
		stroke := "#ddd"
		if e == 0 {
			stroke = "#333"
		}
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x(r), chartTop-4, x(r), bottom+4, stroke)
		if math.Mod(e, every) == 0 {
			p(`<text x="%.1f" y="%.1f" text-anchor="middle">%.3g×</text>`+"\n", x(r), bottom+20, r)
		}
	}
	for i, b := range bars {
		y := chartTop + chartRow*float64(i)
		arrow := "↓"
		if b.HigherIsBetter {
			arrow = "↑"
		}
		p(`<text x="%.1f" y="%.1f" text-anchor="end">%s %s</text>`+"\n", chartLabelWidth-8, y+15, html.EscapeString(b.Label), arrow)
		if b.Ratio <= 0 {
			continue
		}
		fill := "#9e9e9e"
		switch {
		case b.Goal > 0 && b.Met():
			fill = "#2e7d32"
		case b.Goal > 0:
			fill = "#c62828"
		}
		x0, x1 := math.Min(x(1), x(b.Ratio)), math.Max(x(1), x(b.Ratio))
		p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x0, y+4, math.Max(x1-x0, 1), chartRow-8, fill)
		if b.Goal > 0 {
			p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="3,2"/>`+"\n", x(b.Goal), y+1, x(b.Goal), y+chartRow-1)
		}
		p(`<text x="%.1f" y="%.1f">%.3g×</text>`+"\n", math.Max(x1, x(b.Goal))+6, y+15, b.Ratio)
	}
	p("</svg>\n")
	return []byte(w.String())
}
