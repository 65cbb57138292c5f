package diag

import "testing"

func TestSuggest(t *testing.T) {
	known := []string{"hooks", "policies", "data", "tests", "enrich", "cache.lookup", "stage", "steps"}
	for got, want := range map[string]string{
		"hook":        "hooks",
		"policy":      "policies",
		"test":        "tests",
		"enrichh":     "enrich",
		"stgae":       "stage",
		"cache.lokup": "cache.lookup",
		"stpes":       "steps",
		"xyz":         "",
		"kb":          "",
		"upstream":    "",
		"hooks":       "",
	} {
		if got := Suggest(got, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", got, got, want)
		}
	}
	if s := DidYouMean("stgae", known); s != ` (did you mean "stage"?)` {
		t.Errorf("DidYouMean = %q", s)
	}
}
