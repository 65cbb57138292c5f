package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/engine"
)

// Print writes the result for people: the decisions that change, grouped by change,
// what was skipped and why, and a summary line.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "replayed %d decisions (%d plans, %d checks) of %d requests against generation %s\n",
		r.Plans+r.Checks, r.Plans, r.Checks, r.Requests, r.Generation)
	for _, c := range []compare.Change{compare.NewlyDenied, compare.NewlyAllowed, compare.Changed} {
		if n := r.count(c); n > 0 {
			fmt.Fprintf(w, "\n%s (%d):\n", strings.ReplaceAll(string(c), "_", " "), n)
		}
		for _, d := range r.Differences {
			if d.Change == c {
				fmt.Fprintf(w, "  %s  %s -> %s\n", d.Decision.label(), describe(d.Decision.Live), describe(d.Candidate))
				if len(d.Decision.Masked) > 0 {
					fmt.Fprintf(w, "      (replayed with %s masked, as the decision log kept it)\n", strings.Join(d.Decision.Masked, ", "))
				}
			}
		}
	}
	if len(r.Skips) > 0 {
		fmt.Fprintf(w, "\nskipped (%d):\n", len(r.Skips))
		for _, s := range r.Skips {
			fmt.Fprintf(w, "  %s: %s\n", skipLabel(s), s.Reason)
		}
	}
	fmt.Fprintf(w, "\n%d newly denied, %d newly allowed, %d changed, %d unchanged, %d skipped\n",
		r.count(compare.NewlyDenied), r.count(compare.NewlyAllowed), r.count(compare.Changed), r.Unchanged, len(r.Skips))
}

// label names a decision: request, what was decided, and the decision id.
func (d *Decision) label() string {
	what := fmt.Sprintf("after_planning phase %d", d.Phase)
	if d.IsCheck() {
		what = string(d.Call.Operation)
		if d.Call.StepID != "" {
			what += " " + d.Call.StepID
		}
		if d.Call.Capability != "" {
			what += " (" + d.Call.Capability + ")"
		}
	}
	id := ""
	if d.DecisionID != "" {
		id = " [" + d.DecisionID + "]"
	}
	return "request " + d.RequestID + ": " + what + id
}

func skipLabel(s Skip) string {
	out := "request " + s.RequestID
	if s.DecisionID != "" {
		out += " [" + s.DecisionID + "]"
	}
	return out
}

// describe renders a verdict in one phrase: the outcome, then the violations (code and
// step) or the denial (code: reason), or the cause.
func describe(v compare.Verdict) string {
	out := string(v.Outcome)
	switch {
	case len(v.Violations) > 0:
		var codes []string
		for _, x := range v.Violations {
			if x.StepID != "" {
				codes = append(codes, x.Code+" ("+x.StepID+")")
			} else {
				codes = append(codes, x.Code)
			}
		}
		out += ": " + strings.Join(codes, ", ")
	case v.Denial != nil:
		out += " " + v.Denial.Code
		if v.Denial.Reason != "" {
			out += ": " + v.Denial.Reason
		}
	case v.Cause != "" && v.Outcome != engine.OutcomeAccepted:
		out += " (" + string(v.Cause) + ")"
	}
	return out
}

// jsonResult is the machine-readable form of a Result.
type jsonResult struct {
	Generation     string           `json:"generation"`
	PolicyRevision string           `json:"policy_revision,omitempty"`
	Requests       int              `json:"requests"`
	Plans          int              `json:"plans"`
	Checks         int              `json:"checks"`
	Unchanged      int              `json:"unchanged"`
	Differences    []jsonDifference `json:"differences"`
	Skipped        []Skip           `json:"skipped"`
}

type jsonDifference struct {
	RequestID  string          `json:"request_id"`
	DecisionID string          `json:"decision_id,omitempty"`
	Stage      engine.Stage    `json:"stage,omitempty"`
	Phase      int             `json:"phase,omitempty"`
	Operation  string          `json:"operation,omitempty"`
	StepID     string          `json:"step_id,omitempty"`
	Change     compare.Change  `json:"change"`
	Live       compare.Verdict `json:"live"`
	Candidate  compare.Verdict `json:"candidate"`
	Masked     []string        `json:"masked,omitempty"`
}

// WriteJSON writes the result as one JSON document.
func (r *Result) WriteJSON(w io.Writer) error {
	out := jsonResult{Generation: r.Generation, PolicyRevision: r.PolicyRevision, Requests: r.Requests, Plans: r.Plans, Checks: r.Checks,
		Unchanged: r.Unchanged, Differences: []jsonDifference{}, Skipped: append([]Skip{}, r.Skips...)}
	for _, d := range r.Differences {
		j := jsonDifference{RequestID: d.Decision.RequestID, DecisionID: d.Decision.DecisionID, Change: d.Change, Live: d.Decision.Live,
			Candidate: d.Candidate, Masked: d.Decision.Masked}
		if d.Decision.IsCheck() {
			j.Operation, j.StepID = string(d.Decision.Call.Operation), d.Decision.Call.StepID
		} else {
			j.Stage, j.Phase = engine.StageAfterPlanning, d.Decision.Phase
		}
		out.Differences = append(out.Differences, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
