package store

import (
	"slices"
	"time"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/engine"
)

// Summary is what a record list shows of one execution record and what its filters
// match: the record's identity, outcome and times, and the sets of stages, hooks,
// decision reasons, refusal codes and guard outcomes it holds (each sorted and
// without repeats).
type Summary struct {
	RequestID string `json:"request_id"`
	// Request is the request's text, cut (see SummaryTextLen).
	Request    string                  `json:"request,omitempty"`
	Generation string                  `json:"generation,omitempty"`
	Tenant     string                  `json:"tenant,omitempty"`
	Status     engine.RecordStatus     `json:"status"`
	Lifecycle  engine.RequestLifecycle `json:"lifecycle,omitempty"`
	OpenUntil  *time.Time              `json:"open_until,omitempty"`
	Cause      engine.Cause            `json:"cause,omitempty"`
	// Error is the record's error, cut (see SummaryTextLen).
	Error          string                `json:"error,omitempty"`
	Stages         []engine.Stage        `json:"stages"`
	Hooks          []string              `json:"hooks"`
	Reasons        []engine.Reason       `json:"reasons"`
	Violations     []string              `json:"violations"`
	Guards         []engine.CheckOutcome `json:"guard_outcomes"`
	PolicyRevision string                `json:"policy_revision,omitempty"`
	Invocations    int                   `json:"invocations"`
	Phases         int                   `json:"phases"`
	Rejections     int                   `json:"rejections"`
	Operations     int                   `json:"operations"`
	Revision       int64                 `json:"revision"`
	CreatedAt      time.Time             `json:"created_at"`
	UpdatedAt      time.Time             `json:"updated_at"`
}

// SummaryTextLen bounds the request text and error a Summary keeps: longer ones are cut
// to at most that many bytes at a character boundary and end in "…".
const SummaryTextLen = 200

// Summarize returns the summary of rec.
func Summarize(rec *engine.ExecutionRecord) *Summary {
	n := len(rec.PipelineHooks)
	s := &Summary{
		RequestID: rec.RequestID, Request: clip(rec.Request), Generation: rec.Generation, Tenant: rec.Tenant,
		Status: rec.Status, Lifecycle: rec.Lifecycle, Cause: rec.Cause, Error: clip(rec.Error),
		Stages: make([]engine.Stage, 0, n), Hooks: make([]string, 0, n), Reasons: make([]engine.Reason, 0, n),
		Violations: []string{}, Guards: make([]engine.CheckOutcome, 0, len(rec.Operations)),
		Invocations: len(rec.PipelineHooks), Phases: len(rec.Phases), Rejections: len(rec.Rejections),
		Operations: len(rec.Operations), Revision: rec.Revision, CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt,
	}
	if rec.OpenUntil != nil {
		t := *rec.OpenUntil
		s.OpenUntil = &t
	}
	for _, inv := range rec.PipelineHooks {
		s.Stages = append(s.Stages, inv.Phase)
		s.Hooks = append(s.Hooks, inv.HookName)
		if inv.Decision != nil && inv.Decision.Reason != "" {
			s.Reasons = append(s.Reasons, inv.Decision.Reason)
		}
		s.Violations = findingCodes(s.Violations, inv.WouldDeny)
	}
	for _, r := range rec.Rejections {
		for _, v := range r.Violations {
			s.Violations = append(s.Violations, v.Code)
		}
		if r.Code != "" {
			s.Violations = append(s.Violations, string(r.Code))
		}
	}
	for i := range rec.Operations {
		s.addOperation(&rec.Operations[i])
	}
	s.Stages, s.Hooks, s.Reasons = set(s.Stages), set(s.Hooks), set(s.Reasons)
	s.Violations, s.Guards = set(s.Violations), set(s.Guards)
	return s
}

// withOperation returns the summary of the record s summarizes with operation o
// appended, as its revision revision updated at updated (what Summarize returns for
// that record); s is left as it was.
func (s *Summary) withOperation(o *engine.OperationRecord, revision int64, updated time.Time) *Summary {
	c := s.clone()
	c.addOperation(o)
	c.Violations, c.Guards = set(c.Violations), set(c.Guards)
	c.Operations++
	c.Revision, c.UpdatedAt = revision, updated
	return &c
}

// addOperation adds what a summary shows of operation o: its guard outcome and the
// codes of what denied it or would have (to be made sets), its policy revision.
func (s *Summary) addOperation(o *engine.OperationRecord) {
	s.Guards = append(s.Guards, o.Outcome)
	if o.Code != "" {
		s.Violations = append(s.Violations, o.Code)
	}
	s.Violations = findingCodes(s.Violations, o.WouldDeny)
	if o.PolicyRevision != "" {
		s.PolicyRevision = o.PolicyRevision
	}
}

// findingCodes appends to codes the codes of what rules in warn or audit mode would
// have denied: a guard's denial code, a policy's violation codes.
func findingCodes(codes []string, findings []engine.Finding) []string {
	for _, f := range findings {
		if f.Code != "" {
			codes = append(codes, f.Code)
		}
		for _, v := range f.Violations {
			codes = append(codes, v.Code)
		}
	}
	return codes
}

// LifecycleAt is the summarized record's lifecycle as of now (see
// engine.ExecutionRecord.LifecycleAt).
func (s *Summary) LifecycleAt(now time.Time) engine.RequestLifecycle {
	rec := engine.ExecutionRecord{Lifecycle: s.Lifecycle, OpenUntil: s.OpenUntil}
	return rec.LifecycleAt(now)
}

// set sorts xs and drops repeats.
func set[T ~string](xs []T) []T {
	slices.Sort(xs)
	return slices.Compact(xs)
}

// clip cuts s to at most SummaryTextLen bytes at a rune boundary.
func clip(s string) string {
	if len(s) <= SummaryTextLen {
		return s
	}
	n := SummaryTextLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// clone returns a copy of s sharing no slice with it.
func (s *Summary) clone() Summary {
	c := *s
	if s.OpenUntil != nil {
		t := *s.OpenUntil
		c.OpenUntil = &t
	}
	c.Stages, c.Hooks, c.Reasons = slices.Clone(s.Stages), slices.Clone(s.Hooks), slices.Clone(s.Reasons)
	c.Violations, c.Guards = slices.Clone(s.Violations), slices.Clone(s.Guards)
	return c
}
