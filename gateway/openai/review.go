package openai

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentd-dev/agentd/api"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// roundReview is what reviewing one round of tool calls came to (engine.Admission in
// the gateway's terms).
type roundReview struct {
	// calls are the accepted, allowed calls, in the accepted plan's order and form.
	calls []toolCall
	// denials are the calls withheld: unmapped, or denied by a guard.
	denials []denial
	// rejection is set when nothing of the round may run.
	rejection *rejection
	// decisionID is the round's plan review's: the record and the decision log hold
	// the rejection's details under it.
	decisionID string
}

// denial is one withheld tool call.
// It names the function and the step, never the call's id or arguments: a withheld
// call leaves no trace a client could execute.
type denial struct {
	Tool   string `json:"tool"`
	StepID string `json:"step_id,omitempty"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
	// Approval is the approval a held call waits for (approval_required), or the one
	// that was rejected or expired (docs/semantics.md §8.20).
	Approval *api.ApprovalRef `json:"approval,omitempty"`
}

// rejection is why a whole round was refused.
type rejection struct {
	code    string
	hook    string
	cause   engine.Cause
	message string
	// violations are the required hook's policy's, when it denied the phase.
	violations []engine.Violation
}

func requiredRejection(r *engine.RequiredAfterPlanningError) *rejection {
	violations := engine.ViolationsOf(r)
	if violations == nil {
		violations = []engine.Violation{}
	}
	return &rejection{code: codeRequiredAfterPlan, hook: r.Hook, cause: r.DecisionCause(), message: r.Error(), violations: violations}
}

// deniedRound fails a request whose accepted round had every call withheld: the turn
// ends with the refusal, so the request ends too, failed with cause guard_denied (not
// open until its state expires).
type deniedRound struct{ denials []denial }

func (e *deniedRound) Error() string {
	parts := make([]string, len(e.denials))
	for i, d := range e.denials {
		parts[i] = d.Tool + ": " + d.Code
	}
	return "every tool call of the round was denied (" + strings.Join(parts, ", ") + ")"
}

// DecisionCause implements engine.Causer.
func (e *deniedRound) DecisionCause() engine.Cause { return engine.CauseGuardDenied }

// admitted turns an admission into the review's calls and denials: each allowed step
// as the call the client gets (issuedCall), each denied one, and an allowed step no
// function maps to, as a denial.
func (v *roundReview) admitted(cfg *config.OpenAIGateway, a *engine.Admission) {
	for _, d := range a.Denied {
		name, _ := d.Step.Metadata["function"].(string)
		code, reason := d.Reason()
		ref := api.RefOf(d.Approval)
		if ref != nil && code == engine.DenialApprovalRequired {
			reason += "; decide it at " + ref.URL
		}
		v.denials = append(v.denials, denial{Tool: cmp.Or(name, d.Step.Instruction), StepID: d.Step.StepID, Code: code, Reason: reason, Approval: ref})
	}
	for _, ac := range a.Allowed {
		call, ok := issuedCall(cfg, ac)
		if !ok {
			v.denials = append(v.denials, denial{Tool: ac.Step.Instruction, StepID: ac.Step.StepID, Code: "tool_not_mapped",
				Reason: "no function in gateways.openai.tools maps to the accepted step's identity"})
			continue
		}
		v.calls = append(v.calls, call)
	}
}

// text states the review for the model and the user: the rejection, or the calls
// withheld.
func (v *roundReview) text() string {
	var b strings.Builder
	if r := v.rejection; r != nil {
		switch r.code {
		case codeRequiredAfterPlan:
			fmt.Fprintf(&b, "agentd rejected the tool calls (hook %q, %s):", r.hook, r.cause)
			for _, vi := range r.violations {
				fmt.Fprintf(&b, "\n- %s", vi.Code)
				if vi.StepID != "" {
					fmt.Fprintf(&b, " (%s)", vi.StepID)
				}
				fmt.Fprintf(&b, ": %s", vi.Message)
			}
			if len(r.violations) == 0 {
				fmt.Fprintf(&b, "\n- %s", r.message)
			}
		case codeToolCallsDenied:
			b.WriteString("agentd denied every tool call:")
		default:
			fmt.Fprintf(&b, "agentd rejected the tool calls (%s): %s", r.code, r.message)
		}
	} else {
		b.WriteString("agentd withheld these tool calls:")
	}
	for _, d := range v.denials {
		fmt.Fprintf(&b, "\n- %s: %s: %s", d.Tool, d.Code, d.Reason)
	}
	return b.String()
}

// refusal is the rejection as the end user reads it under on_reject: refuse: cfg's
// refusal message, naming the decision id and a generic reason, never the hook, the
// violations or the denials' text (those stay in the record and the error mode).
func (v *roundReview) refusal(cfg *config.OpenAIGateway) string {
	reason := "the requested actions were refused by policy"
	switch v.rejection.code {
	case codeToolCallsDenied:
		reason = "none of the requested actions is allowed"
		if ids := v.held(); len(ids) > 0 {
			reason = "the requested actions await an approval: " + strings.Join(ids, ", ")
		}
	case codeInvalidPlan, codeInvalidToolArguments:
		reason = "the requested actions were malformed"
	}
	return cfg.Refusal(v.decisionID, reason)
}

// held names the approvals the withheld calls wait for: "<id> at <url>" each.
func (v *roundReview) held() []string {
	var out []string
	for _, d := range v.denials {
		if d.Approval != nil && d.Code == engine.DenialApprovalRequired {
			out = append(out, d.Approval.ID+" at "+d.Approval.URL)
		}
	}
	return out
}

// error is the rejection as an OpenAI-shaped 403.
func (v *roundReview) error() *apiError {
	e := newError(http.StatusForbidden, typePolicyViolation, v.rejection.code, "%s", v.text())
	e.Details = map[string]any{"denials": append([]denial{}, v.denials...)}
	if r := v.rejection; r.code == codeRequiredAfterPlan {
		e.Details["hook"], e.Details["cause"], e.Details["violations"] = r.hook, r.cause, r.violations
	}
	return e
}
