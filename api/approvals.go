package api

import (
	"time"

	"github.com/agentd-dev/agentd/engine"
)

// ApprovalsPath is the path of the approvals; an approval's own is ApprovalsPath/{id}.
const ApprovalsPath = "/v1/approvals"

// ApprovalRef is what a check held for an approval names (docs/semantics.md §8.20):
// the approval's id, status and expiry, and URL, the path to read and decide it at.
type ApprovalRef struct {
	ID        string                `json:"id"`
	Status    engine.ApprovalStatus `json:"status"`
	ExpiresAt time.Time             `json:"expires_at"`
	URL       string                `json:"url"`
}

// RefOf is the reference to approval a (nil for nil).
func RefOf(a *engine.Approval) *ApprovalRef {
	if a == nil {
		return nil
	}
	return &ApprovalRef{ID: a.ID, Status: a.Status, ExpiresAt: a.ExpiresAt, URL: ApprovalsPath + "/" + a.ID}
}

// Approval is one approval as GET /v1/approvals answers it: the held call (request,
// step, namespace, agent, capability, parameters and their digest), the rule that
// asked, the status, and the decision and its use when there are.
type Approval struct {
	ID         string                `json:"id"`
	Status     engine.ApprovalStatus `json:"status"`
	RequestID  string                `json:"request_id"`
	StepID     string                `json:"step_id,omitempty"`
	Namespace  string                `json:"namespace,omitempty"`
	AgentName  string                `json:"agent_name,omitempty"`
	Capability string                `json:"capability,omitempty"`
	Tenant     string                `json:"tenant,omitempty"`
	Parameters map[string]any        `json:"parameters,omitempty"`
	Digest     string                `json:"parameters_sha256"`
	Rule       string                `json:"rule"`
	Code       string                `json:"code,omitempty"`
	Reason     string                `json:"reason,omitempty"`
	DecisionID string                `json:"decision_id,omitempty"`
	CreatedAt  time.Time             `json:"created_at"`
	ExpiresAt  time.Time             `json:"expires_at"`
	DecidedAt  *time.Time            `json:"decided_at,omitempty"`
	DecidedBy  string                `json:"decided_by,omitempty"`
	Comment    string                `json:"comment,omitempty"`
	UsedAt     *time.Time            `json:"used_at,omitempty"`
	UsedBy     string                `json:"used_by,omitempty"`
	URL        string                `json:"url"`
}

// ApprovalOf is the wire form of a.
func ApprovalOf(a *engine.Approval) Approval {
	return Approval{
		ID: a.ID, Status: a.Status, RequestID: a.RequestID, StepID: a.StepID, Namespace: a.Namespace, AgentName: a.AgentName,
		Capability: a.Capability, Tenant: a.Tenant, Parameters: a.Parameters, Digest: a.Digest, Rule: a.Rule, Code: a.Code,
		Reason: a.Reason, DecisionID: a.DecisionID, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, DecidedAt: a.DecidedAt,
		DecidedBy: a.DecidedBy, Comment: a.Comment, UsedAt: a.UsedAt, UsedBy: a.UsedBy, URL: ApprovalsPath + "/" + a.ID,
	}
}

// ApprovalList is GET /v1/approvals: pending first (the oldest first), then the
// others, the newest first.
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
}

// ApprovalDecisionRequest is POST /v1/approvals/{id}.
type ApprovalDecisionRequest struct {
	Decision engine.ApprovalDecision `json:"decision"`
	Comment  string                  `json:"comment,omitempty"`
}
