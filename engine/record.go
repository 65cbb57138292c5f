package engine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/agentd-dev/agentd/engine/op"
)

// RecordStatus is the state of a request's execution record.
type RecordStatus string

// Record statuses.
const (
	RecordRunning   RecordStatus = "running"
	RecordSucceeded RecordStatus = "succeeded"
	RecordFailed    RecordStatus = "failed"
)

// Final response sources.
const (
	SourceAfterSynthesis = "after_synthesis_hooks"
	SourceShortCircuit   = "before_planning_short_circuit"
)

// PhaseRecord is one accepted plan phase and the results of its steps.
type PhaseRecord struct {
	Phase   int          `json:"phase"`
	Plan    *RoutingPlan `json:"plan"`
	Results []StepResult `json:"results,omitempty"`
}

// ExecutionRecord is the stored evidence of one request: every hook invocation in
// order, the accepted plan of each phase with its results, the final response and its
// source. Status says whether the work succeeded; Lifecycle, separately, whether the
// request completed. Revision grows with every rewrite; stores never let a lower or
// equal revision replace a stored record (docs/semantics.md §6.6).
type ExecutionRecord struct {
	// SchemaVersion is the layout of the record, ExecutionRecordVersion when written;
	// readers of stored or exported records (agentd replay) check it.
	SchemaVersion int    `json:"schema_version"`
	RequestID     string `json:"request_id"`
	Generation    string `json:"generation,omitempty"`
	// Tenant is the tenant the request's metadata names (TenantOf), if any.
	Tenant string `json:"tenant,omitempty"`
	// Request is the request's text as it was opened.
	Request string `json:"request,omitempty"`
	// Metadata is the request's metadata as it was opened, what its hooks and guards
	// saw: empty, not absent, for a request without any (a record without it was
	// written before records kept it). Stored whole; masking is for the copies shown.
	Metadata  map[string]any   `json:"metadata"`
	Status    RecordStatus     `json:"status"`
	Lifecycle RequestLifecycle `json:"lifecycle,omitempty"`
	// Cause says why a failed request failed (see Cause).
	Cause Cause `json:"cause,omitempty"`
	// OpenUntil is when the request's state expires while it is open: a record still
	// open after it was abandoned (see LifecycleAt).
	OpenUntil     *time.Time    `json:"open_until,omitempty"`
	Error         string        `json:"error,omitempty"`
	PipelineHooks []Invocation  `json:"pipeline_hooks"`
	Phases        []PhaseRecord `json:"phases,omitempty"`
	// Rejections are the plans the request's review refused (a required-hook
	// rejection, which failed the request) and the incoming plans that broke a plan
	// rule (answered 422; the request goes on), with the rejected candidate.
	Rejections []PlanRejection  `json:"rejections,omitempty"`
	Result     *ExecutionResult `json:"result,omitempty"`
	// Operations are the operation checks made for the request, in order, each with
	// its finish once reported.
	Operations          []OperationRecord `json:"operations,omitempty"`
	FinalResponse       string            `json:"final_response,omitempty"`
	FinalResponseSource string            `json:"final_response_source,omitempty"`
	Revision            int64             `json:"revision"`
	CreatedAt           time.Time         `json:"created_at"`
	UpdatedAt           time.Time         `json:"updated_at"`
}

// ExecutionRecordVersion is the SchemaVersion of the records this code writes. It changes
// when a field changes meaning or goes away, not when one is added.
const ExecutionRecordVersion = 1

// Store errors.
var (
	ErrRecordNotFound = errors.New("execution record not found")
	ErrStaleRevision  = errors.New("stale revision")
)

// RecordNotFound is the error of a request without a record: ErrRecordNotFound, naming
// requestID. It is cheap to make, as a store's Get makes one for every new request.
func RecordNotFound(requestID string) error { return recordNotFound(requestID) }

type recordNotFound string

func (e recordNotFound) Error() string {
	return ErrRecordNotFound.Error() + ": " + strconv.Quote(string(e))
}
func (recordNotFound) Unwrap() error { return ErrRecordNotFound }

// RecordStore persists execution records. Implementations must be safe for concurrent
// use. Put takes rec: the caller does not change it after Put returns (the driver
// writes each revision as a new copy of the last one it read), so a store may keep it.
// Get returns a copy the caller may change (CopyRecord); it may share the entries'
// nested values, which never change once recorded: callers of Get read them and
// replace them, never write into them.
type RecordStore interface {
	// Put stores rec unless the stored record for rec.RequestID has a revision greater
	// than or equal to rec.Revision, in which case it returns ErrStaleRevision and
	// changes nothing. The check and the write are one atomic step.
	Put(ctx context.Context, rec *ExecutionRecord) error
	// Get returns the stored record or ErrRecordNotFound.
	Get(ctx context.Context, requestID string) (*ExecutionRecord, error)
}

// OperationStore is a RecordStore that can append one operation record to a stored
// record without the record being read and written whole: the fast path of a check's
// record, whose cost does not grow with the record (the driver falls back to Get and
// Put when a store has none, and when the request has no record yet).
type OperationStore interface {
	// AppendOperation appends op to the operations of the stored record of request
	// requestID and stores the result, updated at at, as the record's next revision,
	// keeping the rest of the record. It takes op as Put takes a record: the caller
	// does not change it after. Without a record it returns ErrRecordNotFound; when
	// the record would then hold more than maxEntries entries (pipeline hooks,
	// operations and rejections) or more than the store holds for one record,
	// ErrTooLarge; either way it changes nothing. Appends and Puts of one record are
	// atomic with respect to each other: an append is never lost to a concurrent Put
	// based on the revision before it (that Put is stale).
	AppendOperation(ctx context.Context, requestID string, op OperationRecord, at time.Time, maxEntries int) error
}

// RecordEntries counts what grows a record with every call: its pipeline hooks,
// operations and rejections (DriverConfig.MaxRecordEntries bounds it).
func RecordEntries(rec *ExecutionRecord) int {
	return len(rec.PipelineHooks) + len(rec.Operations) + len(rec.Rejections)
}

// PlanRejection is one plan phase a request did not get accepted: its candidate plan,
// why (cause, and the required hook's decision reason and the policy's violations, or
// the plan rule it broke) and when.
type PlanRejection struct {
	DecisionID string       `json:"decision_id,omitempty"`
	Phase      int          `json:"phase"`
	Cause      Cause        `json:"cause"`
	Hook       string       `json:"hook,omitempty"`
	Reason     Reason       `json:"reason,omitempty"`
	Violations []Violation  `json:"violations,omitempty"`
	Rule       int          `json:"rule,omitempty"`
	Code       PlanCode     `json:"code,omitempty"`
	StepID     string       `json:"step_id,omitempty"`
	Error      string       `json:"error"`
	Plan       *RoutingPlan `json:"plan"`
	At         time.Time    `json:"at"`
}

// CheckOutcome is the guards' verdict on one operation check.
type CheckOutcome string

// Check outcomes.
const (
	CheckAllow      CheckOutcome = "allow"
	CheckDeny       CheckOutcome = "deny"
	CheckGuardError CheckOutcome = "guard_error"
)

// OperationRecord is the evidence of one operation check: what was asked, which rule
// decided and how, on which generation and policy revision, and, once reported, how
// the operation finished.
type OperationRecord struct {
	DecisionID string       `json:"decision_id,omitempty"`
	Operation  op.Operation `json:"operation"`
	StepID     string       `json:"step_id,omitempty"`
	Namespace  string       `json:"namespace,omitempty"`
	AgentName  string       `json:"agent_name,omitempty"`
	Capability string       `json:"capability,omitempty"`
	Outcome    CheckOutcome `json:"outcome"`
	// Code and Reason are the denial's, or the guard error's text as Reason.
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Guard names the rule that denied or failed: plan_binding or a guard, with its
	// zero-based index among the operation's guards (-1 for plan binding).
	Guard      string      `json:"guard,omitempty"`
	GuardIndex *int        `json:"guard_index,omitempty"`
	Binding    BindingMode `json:"binding,omitempty"`
	Generation string      `json:"generation"`
	// PolicyRevision is the guards' revision of the request's generation;
	// LiveGeneration and LivePolicyRevision are set when the live generation's guards
	// were consulted too.
	PolicyRevision     string        `json:"policy_revision,omitempty"`
	LiveGeneration     string        `json:"live_generation,omitempty"`
	LivePolicyRevision string        `json:"live_policy_revision,omitempty"`
	StartedAt          time.Time     `json:"started_at"`
	Duration           time.Duration `json:"duration"`
	// WouldDeny lists what guards in warn or audit mode would have denied.
	WouldDeny []Finding `json:"would_deny,omitempty"`
	// Approval is the approval the check consulted (a guard rule with effect
	// require_approval matched): its id, status and decision.
	Approval *ApprovalMark `json:"approval,omitempty"`
	// Labels are the request's labels as the guards saw them (labels), CallLabels
	// those flowing into the call (call.labels): with the outcome, what decided it
	// (docs/semantics.md §8.21). Absent when there were none.
	Labels     []string      `json:"labels,omitempty"`
	CallLabels []string      `json:"call_labels,omitempty"`
	Finish     *FinishRecord `json:"finish,omitempty"`
}

// FinishRecord is how a checked operation ended, as its caller reported it.
type FinishRecord struct {
	Status    RunStatus `json:"status"`
	Retryable bool      `json:"retryable,omitempty"`
	Error     string    `json:"error,omitempty"`
	Response  any       `json:"response,omitempty"`
	// Labels are the labels its result got (§8.21).
	Labels   []string      `json:"labels,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	At       time.Time     `json:"at"`
}

// LifecycleAt returns the record's lifecycle as of now: an open request whose state
// expired at OpenUntil is abandoned; a record without a lifecycle stays without one
// (unknown completion).
func (r *ExecutionRecord) LifecycleAt(now time.Time) RequestLifecycle {
	if r.Lifecycle == LifecycleOpen && r.OpenUntil != nil && now.After(*r.OpenUntil) {
		return LifecycleAbandoned
	}
	return r.Lifecycle
}

// CopyRecord returns a copy of rec whose fields and entry slices (pipeline hooks,
// phases, rejections, operations, the result's steps) the caller may change: set a
// field, replace an entry, append. The entries' nested values (plans, step results,
// decisions, effects, findings, finish responses) are shared with rec: once recorded
// they never change, so a writer that changes one replaces the entry or the value
// holding it and never writes into it. Copying a record therefore costs its entry
// count, not its size.
func CopyRecord(rec *ExecutionRecord) *ExecutionRecord {
	out := *rec
	if rec.OpenUntil != nil {
		t := *rec.OpenUntil
		out.OpenUntil = &t
	}
	out.PipelineHooks = slices.Clone(rec.PipelineHooks)
	if out.PipelineHooks == nil {
		out.PipelineHooks = []Invocation{}
	}
	out.Phases = slices.Clone(rec.Phases)
	out.Rejections = slices.Clone(rec.Rejections)
	out.Operations = slices.Clone(rec.Operations)
	if rec.Result != nil {
		out.Result = cloneResult(rec.Result)
	}
	return &out
}
