package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/engine/op"
)

// Denial codes of approvals (docs/semantics.md §8.20).
const (
	// DenialApprovalRequired: a guard rule with effect require_approval (or the plan
	// policy) holds the call until a human approves it; the check's result names the
	// pending approval.
	DenialApprovalRequired = "approval_required"
	// DenialApprovalRejected: the call's approval was rejected; final for that call.
	DenialApprovalRejected = "approval_rejected"
	// DenialApprovalExpired: the call's approval was not decided within its time to live;
	// final for that call.
	DenialApprovalExpired = "approval_expired"
)

// DefaultApprovalTTL is how long an approval stays pending when the generation sets
// no approval_ttl.
const DefaultApprovalTTL = time.Hour

// MaxApprovalCommentLen bounds the comment of a decision.
const MaxApprovalCommentLen = 1024

// ApprovalStatus is where an approval is in its life: pending until decided or
// expired; approved, rejected and expired are terminal.
type ApprovalStatus string

// Approval statuses.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalRejected ApprovalStatus = "rejected"
	ApprovalExpired  ApprovalStatus = "expired"
)

// ApprovalDecision is what an approver decides.
type ApprovalDecision string

// Approval decisions.
const (
	DecisionApprove ApprovalDecision = "approve"
	DecisionReject  ApprovalDecision = "reject"
)

// Approval is one call held for a human decision. It is bound to the call's request,
// step, namespace, agent, capability and parameters (Digest, the SHA-256 of their
// canonical JSON as AppendJSON writes it): only a check of that very call consumes it,
// once. Changed parameters are another call and open another approval.
//
// Slot names the bound call; an approval is stored under its slot, and a slot holds
// one approval at a time: a new one (Seq+1) replaces an approval once it has been
// used. ID is the slot and the sequence number.
type Approval struct {
	ID         string         `json:"id"`
	Slot       string         `json:"slot"`
	Seq        int64          `json:"seq"`
	Revision   int64          `json:"revision"`
	Status     ApprovalStatus `json:"status"`
	RequestID  string         `json:"request_id"`
	StepID     string         `json:"step_id,omitempty"`
	Namespace  string         `json:"namespace,omitempty"`
	AgentName  string         `json:"agent_name,omitempty"`
	Capability string         `json:"capability,omitempty"`
	Tenant     string         `json:"tenant,omitempty"`
	Digest     string         `json:"digest"`
	Parameters map[string]any `json:"parameters,omitempty"`
	// Rule, Code and Reason are the rule that asked for the approval and its text.
	Rule       string    `json:"rule"`
	Code       string    `json:"code,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	DecisionID string    `json:"decision_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	// DecidedAt, DecidedBy (a token's name or its digest prefix) and Comment are the
	// decision's.
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	DecidedBy string     `json:"decided_by,omitempty"`
	Comment   string     `json:"comment,omitempty"`
	// UsedAt and UsedBy (the decision id of the check) are set when an approved call
	// passed its check.
	UsedAt *time.Time `json:"used_at,omitempty"`
	UsedBy string     `json:"used_by,omitempty"`
}

// StatusAt is the approval's status at now: a pending approval past its expiry is
// expired.
func (a *Approval) StatusAt(now time.Time) ApprovalStatus {
	if a.Status == ApprovalPending && !now.Before(a.ExpiresAt) {
		return ApprovalExpired
	}
	return a.Status
}

// ApprovalStore keeps approvals. Every state store the daemon uses implements it
// (store.Memory, bolt, redis); the conformance suite is storetest.Approvals.
type ApprovalStore interface {
	// GetApproval returns the approval stored under slot; ok is false when none is.
	GetApproval(ctx context.Context, slot string) (a *Approval, ok bool, err error)
	// PutApproval stores a under a.Slot for ttl (0: the store's default) unless the
	// stored approval of that slot has a revision greater than or equal to
	// a.Revision, in which case it returns ErrStaleRevision and changes nothing. The
	// check and the write are one atomic step, so of two writers that read the same
	// revision only one wins.
	PutApproval(ctx context.Context, a *Approval, ttl time.Duration) error
	// ListApprovals returns the approvals stored, in no particular order.
	ListApprovals(ctx context.Context) ([]*Approval, error)
}

// ApprovalAsk is a guard rule's request that a call be approved before it runs.
type ApprovalAsk struct {
	Rule   string
	Code   string
	Reason string
}

// RequireApproval reports, from a guard of the operation check ctx belongs to, that
// the call needs an approval; it returns nil, so the guards after it still run (a
// denial by any of them wins). After the guards the check looks the approval up: the
// call passes when it was approved, and is denied approval_required (pending),
// approval_rejected or approval_expired otherwise. Outside an operation check (a
// what-if evaluation of the guards) the call is denied approval_required.
func RequireApproval(ctx context.Context, ask ApprovalAsk) error {
	if sink, _ := ctx.Value(findingSinkKey{}).(*findingSink); sink != nil {
		sink.mu.Lock()
		sink.asks = append(sink.asks, ask)
		sink.mu.Unlock()
		return nil
	}
	return &op.Denial{Code: DenialApprovalRequired, Reason: cmp.Or(ask.Reason, "the call needs an approval")}
}

// firstAsk returns the first approval a guard of the check asked for.
func (s *findingSink) firstAsk() (ApprovalAsk, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.asks) == 0 {
		return ApprovalAsk{}, false
	}
	return s.asks[0], true
}

// ApprovalMark is what an operation record says of the approval its check consulted.
type ApprovalMark struct {
	ID        string         `json:"id"`
	Status    ApprovalStatus `json:"status"`
	DecidedBy string         `json:"decided_by,omitempty"`
	Comment   string         `json:"comment,omitempty"`
}

func markOf(a *Approval, now time.Time) *ApprovalMark {
	return &ApprovalMark{ID: a.ID, Status: a.StatusAt(now), DecidedBy: a.DecidedBy, Comment: a.Comment}
}

// ApprovalErrorCode is why an approval call was not taken.
type ApprovalErrorCode string

// Approval error codes.
const (
	// ApprovalUnknown: no approval has the id (or it is another tenant's).
	ApprovalUnknown ApprovalErrorCode = "unknown_approval"
	// ApprovalDecided: the approval was decided otherwise already.
	ApprovalDecided ApprovalErrorCode = "approval_decided"
	// ApprovalHasExpired: the approval expired undecided.
	ApprovalHasExpired ApprovalErrorCode = "approval_expired"
	// ApprovalInvalid: the decision is not approve or reject, or the comment or a
	// filter is malformed.
	ApprovalInvalid ApprovalErrorCode = "invalid_approval"
	// ApprovalUnavailable: the driver has no approval store.
	ApprovalUnavailable ApprovalErrorCode = "approvals_unavailable"
)

// ApprovalError reports an approval call the driver cannot take.
type ApprovalError struct {
	Code   ApprovalErrorCode
	Detail string
}

func (e *ApprovalError) Error() string { return string(e.Code) + ": " + e.Detail }

// approvalStore returns the store approvals live in: the state store, when it keeps
// them.
func (d *Driver) approvalStore() (ApprovalStore, bool) {
	as, ok := d.states.(ApprovalStore)
	return as, ok
}

// maxApprovalRetries bounds the revision races of one approval call.
const maxApprovalRetries = 8

// approval resolves the approval ask of a check of call whose guards all allowed it:
// nil when an approval of that very call was approved and is now used by this check,
// else the denial (approval_required, approval_rejected, approval_expired) and the
// approval it names. created says the check opened the approval.
func (s *Session) approval(ctx context.Context, call *op.Call, ask ApprovalAsk, decision string) (a *Approval, den *op.Denial, err error) {
	as, ok := s.d.approvalStore()
	if !ok {
		return nil, &op.Denial{Code: DenialApprovalRequired, Reason: "the call needs an approval and the daemon keeps none: its store holds no approvals"}, nil
	}
	digest, err := ParametersDigest(call.Parameters)
	if err != nil {
		return nil, &op.Denial{Code: DenialInvalidParameters, Reason: truncate("the call's parameters do not encode as JSON: " + err.Error())}, nil
	}
	tenant := TenantOf(call.Metadata)
	slot := approvalSlot(tenant, call, digest)
	ttl := cmp.Or(s.gen.ApprovalTTL, DefaultApprovalTTL)
	for range maxApprovalRetries {
		now := s.d.now().UTC()
		cur, found, err := as.GetApproval(ctx, slot)
		if err != nil {
			return nil, nil, storeFailure(call.RequestID, err)
		}
		next := &Approval{}
		switch {
		case !found || cur.Status == ApprovalApproved && cur.UsedAt != nil:
			seq, rev := int64(1), int64(1)
			if found {
				seq, rev = cur.Seq+1, cur.Revision+1
			}
			*next = Approval{
				ID: approvalID(slot, seq), Slot: slot, Seq: seq, Revision: rev, Status: ApprovalPending,
				RequestID: call.RequestID, StepID: call.StepID, Namespace: call.Namespace, AgentName: call.AgentName,
				Capability: call.Capability, Tenant: tenant, Digest: digest, Parameters: call.Parameters,
				Rule: ask.Rule, Code: ask.Code, Reason: ask.Reason, DecisionID: decision, CreatedAt: now, ExpiresAt: now.Add(ttl),
			}
		case cur.StatusAt(now) == ApprovalPending:
			return cur, approvalDenial(DenialApprovalRequired, cur), nil
		case cur.StatusAt(now) == ApprovalExpired:
			return cur, approvalDenial(DenialApprovalExpired, cur), nil
		case cur.Status == ApprovalRejected:
			return cur, approvalDenial(DenialApprovalRejected, cur), nil
		default: // approved and unused: this check uses it
			*next = *cur
			next.Revision++
			next.UsedAt, next.UsedBy = &now, decision
		}
		err = as.PutApproval(ctx, next, ttl+s.d.ttl)
		switch {
		case errors.Is(err, ErrStaleRevision):
			continue // another check or decision won: look again
		case err != nil:
			return nil, nil, storeFailure(call.RequestID, err)
		case next.Status == ApprovalPending:
			return next, approvalDenial(DenialApprovalRequired, next), nil
		}
		return next, nil, nil
	}
	return nil, nil, &RefusalError{Code: RefusedConflict, RequestID: call.RequestID}
}

// approvalDenial is the denial of a check whose approval a is not (or no longer)
// usable.
func approvalDenial(code string, a *Approval) *op.Denial {
	var reason string
	switch code {
	case DenialApprovalRequired:
		reason = fmt.Sprintf("approval %s is pending until %s", a.ID, a.ExpiresAt.Format(time.RFC3339))
	case DenialApprovalRejected:
		reason = fmt.Sprintf("approval %s was rejected by %s", a.ID, cmp.Or(a.DecidedBy, "an approver"))
	default:
		reason = fmt.Sprintf("approval %s expired undecided at %s", a.ID, a.ExpiresAt.Format(time.RFC3339))
	}
	if a.Reason != "" {
		reason += ": " + a.Reason
	}
	return &op.Denial{Code: code, Reason: truncate(reason)}
}

// ParametersDigest is the hex SHA-256 of a call's parameters in canonical JSON
// (AppendJSON: keys sorted, numbers as encoding/json writes them; no parameters are
// {}), the digest an approval binds.
func ParametersDigest(params map[string]any) (string, error) {
	b := []byte("{}")
	if params != nil {
		var err error
		if b, err = AppendJSON(nil, params); err != nil {
			return "", err
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// approvalSlot names the call an approval binds: tenant, request, step, namespace,
// agent, capability and parameters' digest.
func approvalSlot(tenant string, call *op.Call, digest string) string {
	h := sha256.New()
	for _, part := range [...]string{tenant, call.RequestID, call.StepID, call.Namespace, call.AgentName, call.Capability, digest} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// approvalID is the id of approval seq of slot: "apr_<slot>_<seq>".
func approvalID(slot string, seq int64) string {
	return "apr_" + slot + "_" + strconv.FormatInt(seq, 10)
}

// slotOf returns the slot an approval id names.
func slotOf(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, "apr_")
	slot, seq, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || len(slot) != 32 || seq == "" {
		return "", false
	}
	if _, err := strconv.ParseUint(seq, 10, 63); err != nil {
		return "", false
	}
	return slot, true
}

// Approval returns approval id as of now (StatusAt). An approval of another tenant
// than the one ctx is confined to is unknown.
func (d *Driver) Approval(ctx context.Context, id string) (*Approval, error) {
	as, ok := d.approvalStore()
	if !ok {
		return nil, &ApprovalError{Code: ApprovalUnavailable, Detail: "the state store keeps no approvals"}
	}
	a, err := d.lookupApproval(ctx, as, id)
	if err != nil {
		return nil, err
	}
	a.Status = a.StatusAt(d.now())
	return a, nil
}

func (d *Driver) lookupApproval(ctx context.Context, as ApprovalStore, id string) (*Approval, error) {
	unknown := &ApprovalError{Code: ApprovalUnknown, Detail: fmt.Sprintf("no approval %q", id)}
	slot, ok := slotOf(id)
	if !ok {
		return nil, unknown
	}
	a, found, err := as.GetApproval(ctx, slot)
	if err != nil {
		return nil, storeFailure("", err)
	}
	if !found || a.ID != id || CheckTenant(ctx, a.RequestID, a.Tenant) != nil {
		return nil, unknown
	}
	return a, nil
}

// ApprovalFilter selects approvals; empty fields select all.
type ApprovalFilter struct {
	Status    ApprovalStatus
	RequestID string
}

// Approvals lists the approvals f selects, as of now, that ctx's tenant may see:
// pending first (the oldest first, as they expire first), then the others, the newest
// first.
func (d *Driver) Approvals(ctx context.Context, f ApprovalFilter) ([]*Approval, error) {
	switch f.Status {
	case "", ApprovalPending, ApprovalApproved, ApprovalRejected, ApprovalExpired:
	default:
		return nil, &ApprovalError{Code: ApprovalInvalid, Detail: fmt.Sprintf("status must be pending, approved, rejected or expired, got %q", f.Status)}
	}
	as, ok := d.approvalStore()
	if !ok {
		return nil, &ApprovalError{Code: ApprovalUnavailable, Detail: "the state store keeps no approvals"}
	}
	all, err := as.ListApprovals(ctx)
	if err != nil {
		return nil, storeFailure("", err)
	}
	now := d.now()
	out := all[:0]
	for _, a := range all {
		a.Status = a.StatusAt(now)
		if CheckTenant(ctx, a.RequestID, a.Tenant) != nil || f.Status != "" && a.Status != f.Status || f.RequestID != "" && a.RequestID != f.RequestID {
			continue
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *Approval) int {
		ap, bp := a.Status == ApprovalPending, b.Status == ApprovalPending
		switch {
		case ap && !bp:
			return -1
		case bp && !ap:
			return 1
		case ap:
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
		}
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Decide records decision on pending approval id, by who (a token's name or digest
// prefix) with comment. Sending the decision an approval already has returns it
// unchanged (idempotent); another decision on a decided approval is ApprovalDecided,
// any decision on an expired one ApprovalHasExpired, each an *ApprovalError. Of two
// concurrent decisions exactly one is taken.
func (d *Driver) Decide(ctx context.Context, id string, decision ApprovalDecision, who, comment string) (*Approval, error) {
	var status ApprovalStatus
	switch decision {
	case DecisionApprove:
		status = ApprovalApproved
	case DecisionReject:
		status = ApprovalRejected
	default:
		return nil, &ApprovalError{Code: ApprovalInvalid, Detail: fmt.Sprintf("decision must be approve or reject, got %q", decision)}
	}
	if msg := checkComment(comment); msg != "" {
		return nil, &ApprovalError{Code: ApprovalInvalid, Detail: "comment " + msg}
	}
	as, ok := d.approvalStore()
	if !ok {
		return nil, &ApprovalError{Code: ApprovalUnavailable, Detail: "the state store keeps no approvals"}
	}
	for range maxApprovalRetries {
		a, err := d.lookupApproval(ctx, as, id)
		if err != nil {
			return nil, err
		}
		now := d.now().UTC()
		switch a.StatusAt(now) {
		case status:
			return a, nil
		case ApprovalExpired:
			a.Status = ApprovalExpired
			return nil, &ApprovalError{Code: ApprovalHasExpired, Detail: fmt.Sprintf("approval %s expired undecided at %s", id, a.ExpiresAt.Format(time.RFC3339))}
		case ApprovalApproved, ApprovalRejected:
			return nil, &ApprovalError{Code: ApprovalDecided, Detail: fmt.Sprintf("approval %s is %s already", id, a.Status)}
		}
		a.Revision++
		a.Status, a.DecidedAt, a.DecidedBy, a.Comment = status, &now, who, comment
		err = as.PutApproval(ctx, a, a.ExpiresAt.Sub(now)+d.ttl)
		if errors.Is(err, ErrStaleRevision) {
			continue
		}
		if err != nil {
			return nil, storeFailure(a.RequestID, err)
		}
		return a, nil
	}
	return nil, &RefusalError{Code: RefusedConflict, RequestID: id}
}

// checkComment returns why a decision's comment is not acceptable, "" when it is:
// valid UTF-8, at most MaxApprovalCommentLen bytes, no control characters but newline.
func checkComment(c string) string {
	switch {
	case len(c) > MaxApprovalCommentLen:
		return "is longer than " + strconv.Itoa(MaxApprovalCommentLen) + " bytes"
	case !utf8.ValidString(c):
		return "is not valid UTF-8"
	case strings.IndexFunc(c, func(r rune) bool { return r != '\n' && unicode.IsControl(r) }) >= 0:
		return "contains a control character"
	}
	return ""
}

// ApprovalStepKey is the metadata key under which a plan review marks an accepted
// step whose tool call needs an approval (a plan policy's require_approval): {rule,
// code, reason}. A step carrying it, whatever its value, is held: a planner can make
// a step stricter this way, never laxer.
const ApprovalStepKey = "require_approval"

// RequireStepApproval marks step id of plan as needing an approval (ApprovalStepKey).
// The step's metadata map is replaced, not changed: plans share it with their copies.
func RequireStepApproval(plan *RoutingPlan, id string, ask ApprovalAsk) error {
	for i := range plan.Steps {
		st := &plan.Steps[i]
		if st.StepID != id {
			continue
		}
		md := make(map[string]any, len(st.Metadata)+1)
		for k, v := range st.Metadata {
			md[k] = v
		}
		md[ApprovalStepKey] = map[string]any{"rule": ask.Rule, "code": ask.Code, "reason": ask.Reason}
		st.Metadata = md
		return nil
	}
	return fmt.Errorf("require_approval names step %q, which the plan does not have", id)
}

// stepAsk returns the approval an accepted step's mark asks for (RequireStepApproval).
func stepAsk(st *RoutingStep) (ApprovalAsk, bool) {
	if st == nil {
		return ApprovalAsk{}, false
	}
	raw, ok := st.Metadata[ApprovalStepKey]
	if !ok {
		return ApprovalAsk{}, false
	}
	m, _ := raw.(map[string]any)
	str := func(k string) string { s, _ := m[k].(string); return s }
	return ApprovalAsk{Rule: cmp.Or(str("rule"), "plan"), Code: cmp.Or(str("code"), DenialApprovalRequired), Reason: str("reason")}, true
}
