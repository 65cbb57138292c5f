package inproc

import (
	"path/filepath"
	"testing"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
)

func TestPlanReviewSidesAllowEveryPlan(t *testing.T) {
	policies, err := fixture.Policies(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []PlanCase{{3, fixture.Small}, {30, fixture.Large}} {
		for _, v := range []fixture.Variation{fixture.Identical, fixture.NewText, fixture.Unseen, fixture.NewOperations} {
			a, err := AgentdPlanReview(t.TempDir(), policies, c, v)
			if err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			o, err := OPAPlanReview(policies, c, v)
			if err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			for _, s := range []Side{a, o, a, o} {
				if err := s.Op(); err != nil {
					t.Errorf("%s: %v", s.Name, err)
				}
			}
		}
	}
}

func TestBeforePlanningSidesAgree(t *testing.T) {
	_, got, err := AgentdBeforePlanning(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := RawCELBeforePlanning()
	if err != nil {
		t.Fatal(err)
	}
	if err := SameEnrichments(got, want); err != nil {
		t.Error(err)
	}
	if len(got) != 7 {
		t.Errorf("enrichments = %v, want 7 keys", got)
	}
}

func TestPairedRatio_IsTheMedianOfEachRoundsRatio(t *testing.T) {
	a := Result{Rounds: []float64{10, 30, 12}}
	b := Result{Rounds: []float64{10, 15, 4}} // ratios 1, 2, 3; the medians' ratio is 12/10
	if got := PairedRatio(a, b); got != 2 {
		t.Fatalf("PairedRatio = %v, want 2", got)
	}
}
