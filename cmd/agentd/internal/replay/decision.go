package replay

import (
	"github.com/agentd-dev/agentd/cmd/agentd/internal/compare"
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
