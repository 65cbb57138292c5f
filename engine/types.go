package engine

import (
	"encoding/json"
	"time"
)

// PipelineContext is the per-request state shared by every stage. The runners pass it
// to one hook at a time; a hook may read Request and Metadata and read or write
// Enrichments.
type PipelineContext struct {
	Request     string         `json:"request"`
	Metadata    map[string]any `json:"metadata"`
	Enrichments map[string]any `json:"enrichments"`
}

// Well-known enrichment keys, which RenderEnrichments renders first and in sections of
// their own (any other key is rendered under its own name).
const (
	EnrichmentRAGContext           = "rag_context"
	EnrichmentConversationHistory  = "conversation_history"
	EnrichmentActivityCoordination = "activity_coordination"
	EnrichmentUserProfile          = "user_profile"
)

// MetadataConversationTurns is the metadata key whose turn list is rendered into the
// conversation_history enrichment by PromoteMetadata.
const MetadataConversationTurns = "conversation_turns"

// Stage names a hook stage; the values are the JSON and telemetry spellings.
type Stage string

// The four hook stages, in lifecycle order.
const (
	StageBeforePlanning Stage = "before_planning"
	StageAfterPlanning  Stage = "after_planning"
	StageAfterExecution Stage = "after_execution"
	StageAfterSynthesis Stage = "after_synthesis"
)

// Stages lists every stage in lifecycle order.
var Stages = []Stage{StageBeforePlanning, StageAfterPlanning, StageAfterExecution, StageAfterSynthesis}

// PlanMode is a RoutingPlan's execution mode.
type PlanMode string

// Plan modes.
const (
	ModeAutonomous PlanMode = "autonomous"
	ModeWorkflow   PlanMode = "workflow"
)

// RoutingStep is one tool call proposed by the planner.
type RoutingStep struct {
	StepID       string         `json:"step_id"`
	AgentName    string         `json:"agent_name"`
	Namespace    string         `json:"namespace"`
	Instruction  string         `json:"instruction"`
	DependsOn    []string       `json:"depends_on,omitempty"`
	ImplicitDeps []string       `json:"implicit_deps,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
}

// Capability returns metadata.capability when it is a string.
func (s *RoutingStep) Capability() string {
	c, _ := s.Metadata["capability"].(string)
	return c
}

// Parameters returns metadata.parameters when it is an object.
func (s *RoutingStep) Parameters() map[string]any {
	p, _ := s.Metadata["parameters"].(map[string]any)
	return p
}

// NeedsUserInput asks the caller for missing information instead of running steps.
type NeedsUserInput struct {
	Question        string   `json:"question"`
	MissingFields   []string `json:"missing_fields,omitempty"`
	PartialProgress string   `json:"partial_progress,omitempty"`
}

// RoutingPlan is a planner's proposal for one phase. Terminal nil means true.
type RoutingPlan struct {
	PlanID           string          `json:"plan_id"`
	OriginalRequest  string          `json:"original_request"`
	Mode             PlanMode        `json:"mode,omitempty"`
	Steps            []RoutingStep   `json:"steps"`
	CreatedAt        time.Time       `json:"created_at"`
	Terminal         *bool           `json:"terminal,omitempty"`
	ContinuationNote string          `json:"continuation_note,omitempty"`
	PhaseNumber      int             `json:"phase_number,omitempty"`
	NeedsUserInput   *NeedsUserInput `json:"needs_user_input,omitempty"`
}

// IsTerminal reports whether this is the last phase; an absent flag means terminal.
func (p *RoutingPlan) IsTerminal() bool { return p.Terminal == nil || *p.Terminal }

// StepResult is the outcome of one executed (or skipped) step.
type StepResult struct {
	StepID     string         `json:"step_id"`
	AgentName  string         `json:"agent_name"`
	Capability string         `json:"capability"`
	Namespace  string         `json:"namespace"`
	Parameters map[string]any `json:"parameters,omitempty"`
	Response   any            `json:"response,omitempty"`
	Success    bool           `json:"success"`
	Error      string         `json:"error,omitempty"`
	Duration   time.Duration  `json:"duration"`
	Attempts   int            `json:"attempts"`
	Skipped    bool           `json:"skipped,omitempty"`
	SkipReason string         `json:"skip_reason,omitempty"`
}

// ExecutionResult is the combined result of every executed phase.
type ExecutionResult struct {
	PlanID        string        `json:"plan_id"`
	Steps         []StepResult  `json:"steps"`
	Success       bool          `json:"success"`
	TotalDuration time.Duration `json:"total_duration"`
	PhaseCount    int           `json:"phase_count"`
}

// ShortCircuit is a complete answer that ends the request before planning.
type ShortCircuit struct {
	Response string `json:"response"`
	Source   string `json:"source"`
}

// ShortCircuitKind is the provenance of a short-circuit decision.
type ShortCircuitKind string

// Short-circuit kinds. An authoritative answer holds regardless of cache state; a cache
// answer is served only when reads are enabled and its variation map matches.
const (
	KindAuthoritative ShortCircuitKind = "authoritative"
	KindCache         ShortCircuitKind = "cache"
)

// ShortCircuitDecision is what a BeforePlanningDecisionHook returns. CachedAgainst is the
// variation map stored with the cache entry, never the gate's current values echoed back.
type ShortCircuitDecision struct {
	ShortCircuit  *ShortCircuit     `json:"short_circuit"`
	Kind          ShortCircuitKind  `json:"kind"`
	CachedAgainst map[string]string `json:"cached_against,omitempty"`
}

// EffectStatus is the observed outcome of work a hook reported.
type EffectStatus string

// Effect statuses; every status but pending is terminal.
const (
	EffectPending   EffectStatus = "pending"
	EffectSucceeded EffectStatus = "succeeded"
	EffectPartial   EffectStatus = "partial"
	EffectFailed    EffectStatus = "failed"
	EffectSkipped   EffectStatus = "skipped"
)

// Terminal reports whether s is a final status.
func (s EffectStatus) Terminal() bool { return s != EffectPending }

// Effect records work a hook attempted and what it observed, separately from whether
// the hook callback returned. SchemaVersion 0 means 1.
type Effect struct {
	EffectID      string          `json:"effect_id"`
	SchemaVersion int             `json:"schema_version,omitempty"`
	Name          string          `json:"name,omitempty"`
	Status        EffectStatus    `json:"status"`
	Summary       string          `json:"summary,omitempty"`
	Data          json.RawMessage `json:"data,omitempty"`
	Error         string          `json:"error,omitempty"`
	StartedAt     time.Time       `json:"started_at"`
	Duration      time.Duration   `json:"duration"`
	// History holds the statuses the effect had before a report under its id changed
	// the status, oldest first; the recorder fills it, a reporter's own is ignored.
	History []EffectChange `json:"history,omitempty"`
}

// EffectChange is a status an effect had and when a later report replaced it.
type EffectChange struct {
	Status     EffectStatus `json:"status"`
	ReplacedAt time.Time    `json:"replaced_at"`
}

// InvocationStatus says whether a hook callback returned normally.
type InvocationStatus string

// Invocation statuses.
const (
	InvocationSucceeded InvocationStatus = "succeeded"
	InvocationFailed    InvocationStatus = "failed"
	InvocationSkipped   InvocationStatus = "skipped"
)

// FailurePolicy is the failure contract a boundary applied.
type FailurePolicy string

// Failure policies.
const (
	FailOpen   FailurePolicy = "fail_open"
	FailClosed FailurePolicy = "fail_closed"
)

// Action is what the runtime did after a hook returned.
type Action string

// Actions.
const (
	ActionContinue       Action = "continue"
	ActionTerminate      Action = "terminate"
	ActionShortCircuit   Action = "short_circuit"
	ActionPropagatePanic Action = "propagate_panic"
)

// Reason is why a boundary applied its decision: a bounded code, safe as a metric label.
type Reason string

// Decision reasons.
const (
	ReasonHookError         Reason = "hook_error"
	ReasonNoDecision        Reason = "no_decision"
	ReasonMissingPayload    Reason = "missing_payload"
	ReasonUnknownKind       Reason = "unknown_kind"
	ReasonAuthoritative     Reason = "authoritative"
	ReasonCacheReadDisabled Reason = "cache_read_disabled"
	ReasonCacheMismatch     Reason = "cache_dimension_mismatch"
	ReasonCacheMatch        Reason = "cache_match"
	ReasonAccepted          Reason = "accepted"
	ReasonCloneFailed       Reason = "clone_failed"
	ReasonInvalidType       Reason = "invalid_type"
	ReasonInvalidPlan       Reason = "invalid_plan"
	ReasonCompleted         Reason = "completed"
	ReasonPanic             Reason = "panic"
	ReasonSkipped           Reason = "skipped"
)

// DecisionRecord is the consequence a boundary applied to one invocation. A nil
// *DecisionRecord means "not recorded" and is never inferred.
type DecisionRecord struct {
	FailurePolicy FailurePolicy `json:"failure_policy"`
	Action        Action        `json:"action"`
	Reason        Reason        `json:"reason"`
	// Cause says why a failed invocation failed (see Cause); empty when it did not.
	Cause Cause `json:"cause,omitempty"`
}

// Invocation is the record of one hook call. Sequence is 1-based within one stage run
// and restarts for every plan phase; PlanPhase is set for after_planning only.
type Invocation struct {
	HookName  string           `json:"hook_name"`
	Phase     Stage            `json:"phase"`
	Status    InvocationStatus `json:"status"`
	Sequence  int              `json:"sequence"`
	PlanPhase int              `json:"plan_phase,omitempty"`
	StartedAt time.Time        `json:"started_at"`
	Duration  time.Duration    `json:"duration"`
	Error     string           `json:"error,omitempty"`
	Effects   []Effect         `json:"effects,omitempty"`
	Decision  *DecisionRecord  `json:"decision,omitempty"`
	// DecisionID names the stage call that ran the hook.
	DecisionID string `json:"decision_id,omitempty"`
	// Mode is the hook's mode when it does not enforce: its verdict was recorded, not
	// applied. WouldDeny lists what it, or a step of it in warn or audit mode, would
	// have denied.
	Mode      RuleMode  `json:"mode,omitempty"`
	WouldDeny []Finding `json:"would_deny,omitempty"`
	// TraceID and SpanID identify the invocation's span when a tracer is configured.
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
}
