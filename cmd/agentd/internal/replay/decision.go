package replay

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// Decision is one recorded decision: a plan review (Operation empty) or an operation
// check of a request, with what the live configuration decided.
type Decision struct {
	RequestID  string
	DecisionID string
	// Phase is a plan's phase number.
	Phase int
	// Input is what a plan review ran on.
	Input compare.Input
	// Call and State are a check's call and the request's state it was bound against
	// (nil for a request the driver did not know).
	Call  op.Call
	State *engine.RequestState
	Live  compare.Verdict
	// Masked names the payload paths a decision log masked: the candidate saw them
	// masked too.
	Masked []string
	// Lacks names the payload variables (builtin.PayloadVariables) the source did not
	// keep: the candidate saw them empty.
	Lacks []string
}

// unknowable returns why the candidate gen cannot decide d again as the live
// configuration did, "" when it can: its hooks (a plan review's) or guards (a check's)
// may read a payload variable the source lacks or masked, or the request's flow
// (builtin.FlowVariables), which replay does not rebuild from any source.
func (d *Decision) unknowable(gen *config.Generation) string {
	stage, who := engine.StageAfterPlanning, "after_planning hooks"
	if d.IsCheck() {
		stage, who = "", "guards"
	}
	for _, v := range builtin.FlowVariables {
		if gen.Reads.May(stage, v) {
			return fmt.Sprintf("the candidate's %s may read %s, which replay does not rebuild", who, v)
		}
	}
	for _, v := range builtin.PayloadVariables {
		if !gen.Reads.May(stage, v) {
			continue
		}
		if slices.Contains(d.Lacks, v) {
			return fmt.Sprintf("the candidate's %s may read %s, which the source did not keep", who, v)
		}
		for _, m := range d.Masked {
			if m == "*" || m == v || strings.HasPrefix(m, v+".") || strings.HasPrefix(m, v+"[") {
				return fmt.Sprintf("the candidate's %s may read %s, which the source masked (%s)", who, v, m)
			}
		}
	}
	return ""
}

// IsCheck reports whether d is an operation check.
func (d *Decision) IsCheck() bool { return d.Call.Operation != "" }

// Skip is a record, event or decision that cannot be replayed, and why.
type Skip struct {
	RequestID  string `json:"request_id,omitempty"`
	DecisionID string `json:"decision_id,omitempty"`
	Reason     string `json:"reason"`
}

// Set is what a source holds: the decisions to replay, in order, and what was skipped.
type Set struct {
	Decisions []Decision
	Skips     []Skip
}

// Add appends o's decisions and skips to s.
func (s *Set) Add(o *Set) {
	s.Decisions = append(s.Decisions, o.Decisions...)
	s.Skips = append(s.Skips, o.Skips...)
}

// requests counts the distinct requests the decisions belong to.
func (s *Set) requests() int {
	seen := map[string]bool{}
	for _, d := range s.Decisions {
		seen[d.RequestID] = true
	}
	return len(seen)
}
