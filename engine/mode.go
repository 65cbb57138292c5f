package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// RuleMode says whether a rule's verdict counts (docs/semantics.md §6.9). A hook, a
// step of one or a guard in warn or audit mode is evaluated as usual, but what it would
// have denied is recorded as a Finding instead of applied: the outcome of the call is
// the one it would have had without the rule. Warn also returns the findings to the
// caller as warnings.
type RuleMode string

// Rule modes.
const (
	RuleEnforce RuleMode = "enforce"
	RuleWarn    RuleMode = "warn"
	RuleAudit   RuleMode = "audit"
)

// Enforcing reports whether m applies its rule's verdict ("" is enforce).
func (m RuleMode) Enforcing() bool { return m == "" || m == RuleEnforce }

// Moded is implemented by a hook that may run in warn or audit mode. A hook without it
// enforces.
type Moded interface {
	RuleMode() RuleMode
}

// Finding is what a rule in warn or audit mode would have denied (or, for a
// before_planning hook, the short circuit it would have taken): the rule, its code and
// reason or the policy's violations, and why.
type Finding struct {
	Mode       RuleMode    `json:"mode"`
	Rule       string      `json:"rule"`
	Code       string      `json:"code,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	Cause      Cause       `json:"cause,omitempty"`
	Violations []Violation `json:"violations,omitempty"`
}

// Warnings returns the findings of fs made in warn mode.
func Warnings(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Mode == RuleWarn {
			out = append(out, f)
		}
	}
	return out
}

// modeOf returns h's mode.
func modeOf(h Hook) RuleMode {
	if m, ok := h.(Moded); ok && !m.RuleMode().Enforcing() {
		return m.RuleMode()
	}
	return RuleEnforce
}

// findingOf describes a rejection by a non-enforcing hook.
func findingOf(mode RuleMode, hook string, reason Reason, err error) Finding {
	f := Finding{Mode: mode, Rule: "hook " + hook, Code: string(reason), Cause: causeFor(reason, err), Violations: ViolationsOf(err)}
	if err != nil {
		f.Reason = err.Error()
	}
	return f
}

type findingSinkKey struct{}

// findingSink collects the findings of one operation check.
type findingSink struct {
	mu       sync.Mutex
	findings []Finding
	asks     []ApprovalAsk // what rules with effect require_approval asked (RequireApproval)
}

func withFindingSink(ctx context.Context) (context.Context, *findingSink) {
	sink := &findingSink{}
	return context.WithValue(ctx, findingSinkKey{}, sink), sink
}

func (s *findingSink) list() []Finding {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Finding(nil), s.findings...)
}

// ReportFinding records what a rule in warn or audit mode inside the hook invocation or
// the operation check that ctx belongs to would have denied. Without recording it is a
// no-op. An enforcing mode is an error: an enforcing rule denies instead.
func ReportFinding(ctx context.Context, f Finding) error {
	if f.Mode.Enforcing() {
		return fmt.Errorf("engine: a finding of rule %q in enforce mode: an enforcing rule denies instead", f.Rule)
	}
	f.Violations = slices.Clone(f.Violations)
	if sink, _ := ctx.Value(effectSinkKey{}).(*effectSink); sink != nil {
		sink.trail.find(sink.index, f)
		return nil
	}
	if sink, _ := ctx.Value(findingSinkKey{}).(*findingSink); sink != nil {
		sink.mu.Lock()
		sink.findings = append(sink.findings, f)
		sink.mu.Unlock()
	}
	return nil
}

// copyEnrichments returns a deep copy of m (a shallow one when a value cannot be
// copied), for a hook whose changes must not reach the request.
func copyEnrichments(m map[string]any) map[string]any {
	if c, err := cloneMap(m); err == nil && c != nil {
		return c
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
