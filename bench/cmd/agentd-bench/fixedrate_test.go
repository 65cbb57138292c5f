package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/load"
)

func TestParseRates(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []float64 // nil: an error
	}{
		{"500,1000", []float64{500, 1000}},
		{" 250.5 , 3000", []float64{250.5, 3000}},
		{"", nil},
		{"500,", nil},
		{"0", nil},
		{"-1", nil},
		{"Inf", nil},
		{"NaN", nil},
		{"fast", nil},
	} {
		got, err := parseRates(tc.spec)
		if tc.want == nil {
			if err == nil {
				t.Errorf("parseRates(%q) = %v, want an error", tc.spec, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseRates(%q) = %v, %v; want %v", tc.spec, got, err, tc.want)
		}
	}
}

func TestFixedRateVerdict(t *testing.T) {
	kept := load.OpenResult{Rate: 1000, Achieved: 1000, Latencies: make([]time.Duration, 100)}
	slipped := load.OpenResult{Rate: 1000, Achieved: 700, Latencies: make([]time.Duration, 100), Late: 60}
	for _, tc := range []struct {
		name    string
		share   time.Duration
		d, p, g load.OpenResult
		want    string
	}{
		{"met", 100 * time.Microsecond, kept, kept, kept, "**met**"},
		{"over the goal", 400 * time.Microsecond, kept, kept, kept, "**not met**"},
		{"agentd fell behind", 0, kept, kept, slipped, "**not met**"},
		{"the proxy fell behind", -time.Millisecond, kept, slipped, kept, "**not judged**"},
		{"the direct calls fell behind", 0, slipped, kept, slipped, "**not judged**"},
	} {
		b := &bench{}
		got := b.fixedRateVerdict("14b2", "14b4", tc.share, 0, tc.d, tc.p, tc.g)
		if !strings.Contains(got, tc.want) { // "**met**" is not in "**not met**"
			t.Errorf("%s: verdict %q, want %s", tc.name, got, tc.want)
		}
		if len(b.goals) != 1 || !strings.Contains(b.goals[0], tc.want) {
			t.Errorf("%s: goals %q, want one saying %s", tc.name, b.goals, tc.want)
		}
	}
}
