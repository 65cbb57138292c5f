package replay

import (
	"context"
	"slices"

	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/config"
)

// Difference is one decision the candidate decides otherwise.
type Difference struct {
	Decision  *Decision
	Change    compare.Change
	Candidate compare.Verdict
}

// Result is a replay: what was replayed against which generation, and what changed.
type Result struct {
	Generation     string
	PolicyRevision string
	Requests       int
	Plans, Checks  int
	Unchanged      int
	Differences    []Difference
	Skips          []Skip
}

// Run decides every decision of set again with gen, in order. A decision gen's hooks or
// guards cannot decide as the live configuration did, because they may read what the
// source lacks or masked, is refused: a skip that says so, never a difference.
func Run(ctx context.Context, gen *config.Generation, set *Set) *Result {
	r := &Result{Generation: gen.ID, PolicyRevision: gen.PolicyRevision, Requests: set.requests(), Skips: slices.Clone(set.Skips)}
	for i := range set.Decisions {
		d := &set.Decisions[i]
		if why := d.unknowable(gen); why != "" {
			r.Skips = append(r.Skips, Skip{RequestID: d.RequestID, DecisionID: d.DecisionID, Reason: why})
			continue
		}
		var v compare.Verdict
		if d.IsCheck() {
			r.Checks++
			v = compare.Check(ctx, &gen.Generation, d.State, d.Call)
		} else {
			r.Plans++
			v = compare.Plan(ctx, &gen.Generation, d.Input)
		}
		if change := compare.Compare(d.Live, v); change != compare.Same {
			r.Differences = append(r.Differences, Difference{Decision: d, Change: change, Candidate: v})
		} else {
			r.Unchanged++
		}
	}
	return r
}

// Changed reports whether any decision would change.
func (r *Result) Changed() bool { return len(r.Differences) > 0 }

// count returns how many differences are of change c.
func (r *Result) count(c compare.Change) int {
	n := 0
	for _, d := range r.Differences {
		if d.Change == c {
			n++
		}
	}
	return n
}
