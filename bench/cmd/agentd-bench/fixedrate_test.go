package main

import (
	"slices"
	"testing"
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
