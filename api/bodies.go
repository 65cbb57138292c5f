package api

import (
	"encoding/json"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/jsonread"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/policy"
)

// Request and response bodies of the stage API (JSON, snake_case); docs/openapi.yaml
// describes each.

// BeforePlanningRequest opens a request and runs before_planning.
type BeforePlanningRequest struct {
	RequestID         string            `json:"request_id"`
	Request           *string           `json:"request"`
	Metadata          map[string]any    `json:"metadata,omitempty"`
	CacheVary         map[string]string `json:"cache_vary,omitempty"`
	CacheReadDisabled bool              `json:"cache_read_disabled,omitempty"`
}

// ShortCircuitBody is an accepted short circuit in a before_planning response.
type ShortCircuitBody struct {
	Response   string                  `json:"response"`
	Source     string                  `json:"source"`
	Kind       engine.ShortCircuitKind `json:"kind"`
	Reason     string                  `json:"reason"`
	Hook       string                  `json:"hook"`
	Confidence float64                 `json:"confidence"`
	Metadata   map[string]any          `json:"metadata,omitempty"`
}

// BeforePlanningResponse is the outcome of before_planning.
type BeforePlanningResponse struct {
	DecisionID string `json:"decision_id"`
	// Warnings are what rules in warn mode would have denied.
	Warnings     []engine.Finding    `json:"warnings,omitempty"`
	RequestID    string              `json:"request_id"`
	Generation   string              `json:"generation"`
	Enrichments  map[string]any      `json:"enrichments"`
	Rendered     string              `json:"rendered_enrichments,omitempty"`
	ShortCircuit *ShortCircuitBody   `json:"short_circuit,omitempty"`
	Invocations  []engine.Invocation `json:"invocations"`
}

// AfterPlanningRequest runs after_planning on one phase's plan.
type AfterPlanningRequest struct {
	RequestID string              `json:"request_id"`
	Phase     int                 `json:"phase,omitempty"`
	Plan      *engine.RoutingPlan `json:"plan"`
	Request   *string             `json:"request,omitempty"`
	Metadata  map[string]any      `json:"metadata,omitempty"`
	// Explain asks for the explanation of every Rego evaluation of the call (the
	// ?explain=true query parameter; it is not part of the body).
	Explain bool `json:"-"`
}

// AfterPlanningResponse carries the accepted plan, and with ?explain=true the
// explanation of each Rego evaluation.
type AfterPlanningResponse struct {
	DecisionID string `json:"decision_id"`
	// Warnings are what rules in warn mode would have denied.
	Warnings    []engine.Finding      `json:"warnings,omitempty"`
	RequestID   string                `json:"request_id"`
	Generation  string                `json:"generation"`
	Plan        *engine.RoutingPlan   `json:"plan"`
	Invocations []engine.Invocation   `json:"invocations"`
	Explanation []*policy.Explanation `json:"explanation,omitempty"`
}

// AfterExecutionRequest reports the combined execution result.
type AfterExecutionRequest struct {
	RequestID string                  `json:"request_id"`
	Result    *engine.ExecutionResult `json:"result"`
}

// AfterExecutionResponse lists the after_execution invocations.
type AfterExecutionResponse struct {
	DecisionID string `json:"decision_id"`
	// Warnings are what rules in warn mode would have denied.
	Warnings    []engine.Finding    `json:"warnings,omitempty"`
	RequestID   string              `json:"request_id"`
	Generation  string              `json:"generation"`
	Invocations []engine.Invocation `json:"invocations"`
}

// AfterSynthesisRequest rewrites the synthesized response.
type AfterSynthesisRequest struct {
	RequestID string  `json:"request_id"`
	Response  *string `json:"response"`
}

// AfterSynthesisResponse carries the final response.
type AfterSynthesisResponse struct {
	DecisionID string `json:"decision_id"`
	// Warnings are what rules in warn mode would have denied.
	Warnings    []engine.Finding    `json:"warnings,omitempty"`
	RequestID   string              `json:"request_id"`
	Generation  string              `json:"generation"`
	Response    string              `json:"response"`
	Invocations []engine.Invocation `json:"invocations"`
}

// OperationCheckRequest asks the guards about one operation call.
type OperationCheckRequest struct {
	Operation op.Operation `json:"operation"`
	Call      *op.Call     `json:"call"`
}

// OperationCheckResponse is the answer of plan binding and the guards; Denial is set
// when not allowed.
type OperationCheckResponse struct {
	DecisionID string `json:"decision_id"`
	// Warnings are what guards in warn mode would have denied.
	Warnings []engine.Finding `json:"warnings,omitempty"`
	Allowed  bool             `json:"allowed"`
	Denial   *op.Denial       `json:"denial,omitempty"`
	// Approval names the approval the call needs (denial approval_required, rejected
	// or expired) or used (allowed): docs/semantics.md §8.20.
	Approval       *ApprovalRef       `json:"approval,omitempty"`
	PolicyRevision string             `json:"policy_revision,omitempty"`
	Binding        engine.BindingMode `json:"binding"`
}

// OperationFinishRequest reports how a checked tool_call step ended.
type OperationFinishRequest struct {
	RequestID string           `json:"request_id"`
	StepID    string           `json:"step_id"`
	Status    engine.RunStatus `json:"status"`
	// Retryable, on a failure, allows one more check of the step.
	Retryable bool `json:"retryable,omitempty"`
	// Response is the step's response: {{<step>.response.…}} references of later steps
	// resolve against it.
	Response any           `json:"response,omitempty"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
}

// OperationFinishResponse acknowledges a finish.
type OperationFinishResponse struct {
	RequestID string           `json:"request_id"`
	StepID    string           `json:"step_id"`
	Status    engine.RunStatus `json:"status"`
}

// EffectUpdateRequest completes (or updates) a pending effect a hook announced.
type EffectUpdateRequest struct {
	RequestID string              `json:"request_id"`
	EffectID  string              `json:"effect_id"`
	Status    engine.EffectStatus `json:"status"`
	Name      string              `json:"name,omitempty"`
	Summary   string              `json:"summary,omitempty"`
	Data      json.RawMessage     `json:"data,omitempty"`
	Error     string              `json:"error,omitempty"`
	Duration  time.Duration       `json:"duration,omitempty"`
}

// EffectUpdateResponse acknowledges an effect update.
type EffectUpdateResponse struct {
	RequestID string              `json:"request_id"`
	EffectID  string              `json:"effect_id"`
	Status    engine.EffectStatus `json:"status"`
}

// afterPlanningFields are the JSON names of AfterPlanningRequest, in ReadJSON's order.
var afterPlanningFields = jsonread.Fields[AfterPlanningRequest]([]string{"request_id", "phase", "plan", "request", "metadata"})

// ReadJSON fills q from the whole JSON text data on jsonread's allocation-light fast
// path, exactly as encoding/json with DisallowUnknownFields would, or reports false
// and leaves q as it was: the text is outside the fast path's subset, and the caller
// decodes it with encoding/json (which also reports the error, if any).
func (q *AfterPlanningRequest) ReadJSON(data []byte) bool {
	r := jsonread.New(data)
	var req AfterPlanningRequest
	ok := r.Struct(afterPlanningFields, func(i int) bool {
		switch i {
		case 0:
			return r.String(&req.RequestID)
		case 1:
			return r.Int(&req.Phase)
		case 2:
			return engine.ReadPlan(r, &req.Plan)
		case 3:
			req.Request = new(string)
			return r.String(req.Request)
		default:
			return r.Map(&req.Metadata)
		}
	}) && r.End()
	if ok {
		*q = req
	}
	return ok
}

// operationCheckFields are the JSON names of OperationCheckRequest, in ReadJSON's
// order.
var operationCheckFields = jsonread.Fields[OperationCheckRequest]([]string{"operation", "call"})

// ReadJSON is AfterPlanningRequest.ReadJSON for an operation check.
func (q *OperationCheckRequest) ReadJSON(data []byte) bool {
	r := jsonread.New(data)
	var req OperationCheckRequest
	ok := r.Struct(operationCheckFields, func(i int) bool {
		if i == 0 {
			return r.String((*string)(&req.Operation))
		}
		return readCall(r, &req.Call)
	}) && r.End()
	if ok {
		*q = req
	}
	return ok
}

// callFields are the JSON names of op.Call, in readCall's order.
var callFields = jsonread.Fields[op.Call]([]string{"operation", "request_id", "step_id", "namespace", "agent_name", "capability",
	"parameters", "model", "phase", "request", "metadata"})

// readCall reads an op.Call on jsonread's fast path: into dst, as encoding/json
// decodes one with DisallowUnknownFields, or false for a text outside the subset.
func readCall(r *jsonread.Reader, dst **op.Call) bool {
	c := new(op.Call)
	*dst = c
	return r.Struct(callFields, func(i int) bool {
		switch i {
		case 0:
			return r.String((*string)(&c.Operation))
		case 1:
			return r.String(&c.RequestID)
		case 2:
			return r.String(&c.StepID)
		case 3:
			return r.String(&c.Namespace)
		case 4:
			return r.String(&c.AgentName)
		case 5:
			return r.String(&c.Capability)
		case 6:
			return r.Map(&c.Parameters)
		case 7:
			return r.String(&c.Model)
		case 8:
			return r.Int(&c.Phase)
		case 9:
			return r.String(&c.Request)
		default:
			return r.Map(&c.Metadata)
		}
	})
}

// AppendJSON writes the members of AfterPlanningResponse (those with warnings or an
// explanation by leaving the answer to the Encoder): a member added to the type
// without it fails when the package starts.
var _ = jsonread.Fields[AfterPlanningResponse]([]string{"decision_id", "warnings", "request_id", "generation", "plan", "invocations", "explanation"})

// It appends to dst, without reflection, what an encoding/json.Encoder with
// SetEscapeHTML(false) writes for r (without the newline), or reports false to leave
// r to such an Encoder.
func (r *AfterPlanningResponse) AppendJSON(dst []byte) ([]byte, bool) {
	if r == nil || len(r.Warnings) > 0 || len(r.Explanation) > 0 {
		return dst, false
	}
	buf := engine.AppendJSONStringUnescapedHTML(append(dst, `{"decision_id":`...), r.DecisionID)
	buf = engine.AppendJSONStringUnescapedHTML(append(buf, `,"request_id":`...), r.RequestID)
	buf = engine.AppendJSONStringUnescapedHTML(append(buf, `,"generation":`...), r.Generation)
	buf, err := engine.AppendJSONUnescapedHTML(append(buf, `,"plan":`...), r.Plan)
	if err == nil {
		buf, err = engine.AppendJSONUnescapedHTML(append(buf, `,"invocations":`...), r.Invocations)
	}
	return append(buf, '}'), err == nil
}
