package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// ErrorType is the type of an API error body. Clients match on type, never on message.
type ErrorType string

// Error types of the API. A refusal of the driver's has its refusal code as type
// (engine.RefusalCode: not_ready, generation_retired, ...).
const (
	TypeInvalidJSON           ErrorType = "invalid_json"
	TypeInvalidField          ErrorType = "invalid_field"
	TypeUnknownField          ErrorType = "unknown_field"
	TypeInvalidQuery          ErrorType = "invalid_query"
	TypeMissingField          ErrorType = "missing_field"
	TypeBodyTooLarge          ErrorType = "body_too_large"
	TypeInvalidPlan           ErrorType = "invalid_plan"
	TypeRequiredAfterPlanning ErrorType = "required_after_planning"
	TypeHookContract          ErrorType = "hook_contract"
	TypeInvalidCall           ErrorType = "invalid_call"
	TypeGuardError            ErrorType = "guard_error"
	TypeNotFound              ErrorType = "not_found"
	TypeMethodNotAllowed      ErrorType = "method_not_allowed"
	TypeUnauthorized          ErrorType = "unauthorized"
	TypeForbidden             ErrorType = "forbidden"
	TypeTenantForbidden       ErrorType = "tenant_forbidden"
	TypeHostForbidden         ErrorType = "host_forbidden"
	TypeCrossOrigin           ErrorType = "cross_origin"
	TypeUnsupportedMediaType  ErrorType = "unsupported_media_type"
	TypeTooManySessions       ErrorType = "too_many_sessions" // the MCP gateway's
	TypeRequestTimeout        ErrorType = "request_timeout"
	TypeNotReady              ErrorType = "not_ready"
	TypeGenerationRetired     ErrorType = "generation_retired"
	TypeGenerationExpired     ErrorType = "generation_expired"
	TypeRequestFailed         ErrorType = "request_failed"
	TypeConflict              ErrorType = "conflict"
	TypeRequestTooLarge       ErrorType = "request_too_large"
	TypeInvalidEffect         ErrorType = "invalid_effect"
	TypeEffectTerminal        ErrorType = "effect_terminal"
	TypeUnknownEffect         ErrorType = "unknown_effect"
	TypeInvalidFinish         ErrorType = "invalid_finish"
	TypeNotStarted            ErrorType = "not_started"
	TypeStoreUnavailable      ErrorType = "store_unavailable"
	TypeUnknownApproval       ErrorType = "unknown_approval"
	TypeApprovalDecided       ErrorType = "approval_decided"
	TypeApprovalExpired       ErrorType = "approval_expired"
	TypeInvalidApproval       ErrorType = "invalid_approval"
	TypeApprovalsUnavailable  ErrorType = "approvals_unavailable"
	TypeInternal              ErrorType = "internal"
)

// Error is an error answered as `{"error": {"type", "message", ...details}}` with
// Status. It is also what api/client returns for an error answer.
type Error struct {
	Status  int
	Type    ErrorType
	Message string
	// Details are the further members of the error object (field, generation, hook,
	// violations, decision_id, ...).
	Details map[string]any
}

func (e *Error) Error() string { return string(e.Type) + ": " + e.Message }

// MarshalJSON renders the error body.
func (e *Error) MarshalJSON() ([]byte, error) {
	body := make(map[string]any, len(e.Details)+2)
	for k, v := range e.Details {
		body[k] = v
	}
	body["type"], body["message"] = e.Type, e.Message
	return json.Marshal(map[string]any{"error": body})
}

// UnmarshalJSON reads an error body; Status is not part of it.
func (e *Error) UnmarshalJSON(data []byte) error {
	var body struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return err
	}
	if body.Error == nil {
		return errors.New("api: not an error body (no error object)")
	}
	typ, _ := body.Error["type"].(string)
	msg, _ := body.Error["message"].(string)
	delete(body.Error, "type")
	delete(body.Error, "message")
	e.Type, e.Message, e.Details = ErrorType(typ), msg, nil
	if len(body.Error) > 0 {
		e.Details = body.Error
	}
	return nil
}

// Errorf returns an error of status and type with a formatted message.
func Errorf(status int, typ ErrorType, format string, args ...any) *Error {
	return &Error{Status: status, Type: typ, Message: fmt.Sprintf(format, args...)}
}

// With sets the detail k to v and returns e.
func (e *Error) With(k string, v any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[k] = v
	return e
}

// RefusalClass returns the class of the refusal e answers, and false when e is no
// refusal of the driver's (its type is not a refusal code).
func (e *Error) RefusalClass() (engine.RefusalClass, bool) {
	for _, c := range engine.RefusalCodes {
		if string(c) == string(e.Type) {
			return c.Class(), true
		}
	}
	return "", false
}

// Retryable reports whether the same call may succeed if made again unchanged: e
// answers a refusal whose code is retryable (engine.RefusalCode.Retryable).
func (e *Error) Retryable() bool {
	_, ok := e.RefusalClass()
	return ok && engine.RefusalCode(e.Type).Retryable()
}

// classStatus is the HTTP status of each refusal class.
var classStatus = map[engine.RefusalClass]int{
	engine.ClassNotReady:    http.StatusServiceUnavailable,
	engine.ClassConflict:    http.StatusConflict,
	engine.ClassForbidden:   http.StatusForbidden,
	engine.ClassTooLarge:    http.StatusRequestEntityTooLarge,
	engine.ClassUnavailable: http.StatusServiceUnavailable,
}

// approvalStatus is the HTTP status of each approval error code; its types are the
// codes (TypeUnknownApproval, ...).
var approvalStatus = map[engine.ApprovalErrorCode]int{
	engine.ApprovalUnknown:     http.StatusNotFound,
	engine.ApprovalDecided:     http.StatusConflict,
	engine.ApprovalHasExpired:  http.StatusConflict,
	engine.ApprovalInvalid:     http.StatusBadRequest,
	engine.ApprovalUnavailable: http.StatusServiceUnavailable,
}

// StatusOf is the one mapping of an error of the engine's to an HTTP status and an
// error code, used by the stage API and both gateways alike:
//
//   - an *Error: its own status and type;
//   - a refusal (engine.RefusalError): the status of its code's class (not_ready 503,
//     conflict 409, forbidden 403, too_large 413, unavailable 503) and the code;
//   - a required after_planning rejection: 403 required_after_planning;
//   - an invalid plan: 422 invalid_plan;
//   - a guard error (fail closed): 403 guard_error;
//   - an invalid operation call: 400 invalid_call;
//   - a finish the step does not take: 400 invalid_finish or 409 not_started;
//   - an effect update: 400 invalid_effect, 409 effect_terminal or 404 unknown_effect;
//   - a hook breaking its contract: 500 hook_contract;
//   - an approval call: 404 unknown_approval, 409 approval_decided or approval_expired,
//     400 invalid_approval, 503 approvals_unavailable; anything else 500 internal.
func StatusOf(err error) (status int, code string) {
	var e *Error
	var call *op.CallError
	var finish *engine.FinishError
	var effect *engine.EffectError
	var contract *engine.ContractError
	var approval *engine.ApprovalError
	if errors.As(err, &e) {
		return e.Status, string(e.Type)
	}
	if r, ok := engine.AsRefusal(err); ok {
		return classStatus[r.Code.Class()], string(r.Code)
	}
	if _, ok := engine.AsRequiredAfterPlanningError(err); ok {
		return http.StatusForbidden, string(TypeRequiredAfterPlanning)
	}
	if _, ok := engine.AsPlanError(err); ok {
		return http.StatusUnprocessableEntity, string(TypeInvalidPlan)
	}
	if _, ok := op.AsGuardError(err); ok {
		return http.StatusForbidden, string(TypeGuardError)
	}
	switch {
	case errors.As(err, &call):
		return http.StatusBadRequest, string(TypeInvalidCall)
	case errors.As(err, &finish) && finish.Code == engine.FinishInvalid:
		return http.StatusBadRequest, string(TypeInvalidFinish)
	case errors.As(err, &finish):
		return http.StatusConflict, string(TypeNotStarted)
	case errors.As(err, &effect) && effect.Code == engine.UpdateInvalidEffect:
		return http.StatusBadRequest, string(TypeInvalidEffect)
	case errors.As(err, &effect) && effect.Code == engine.UpdateTerminalEffect:
		return http.StatusConflict, string(TypeEffectTerminal)
	case errors.As(err, &effect):
		return http.StatusNotFound, string(TypeUnknownEffect)
	case errors.As(err, &contract):
		return http.StatusInternalServerError, string(TypeHookContract)
	case errors.As(err, &approval):
		return approvalStatus[approval.Code], string(approval.Code)
	}
	return http.StatusInternalServerError, string(TypeInternal)
}

// ErrorOf is the API error answering err: StatusOf's status and code, a message safe
// for clients (a store failure's cause is for logs only) and the details of its kind
// (the generation of a retired request; the rule, code and step of an invalid plan;
// the hook, reason, cause and violations of a rejection; the guard and operation of
// a guard error; the field of an invalid call).
func ErrorOf(err error) *Error {
	status, code := StatusOf(err)
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	out := &Error{Status: status, Type: ErrorType(code), Message: err.Error()}
	var call *op.CallError
	var finish *engine.FinishError
	var effect *engine.EffectError
	var approval *engine.ApprovalError
	if r, ok := engine.AsRefusal(err); ok {
		switch {
		case r.Code.Class() == engine.ClassUnavailable:
			out.Message = "state store unavailable"
		case r.Code == engine.RefusedGenerationRetired, r.Code == engine.RefusedGenerationExpired:
			out.With("generation", r.Generation)
		}
		return out
	}
	if r, ok := engine.AsRequiredAfterPlanningError(err); ok {
		violations := engine.ViolationsOf(r)
		if violations == nil {
			violations = []engine.Violation{}
		}
		return out.With("hook", r.Hook).With("reason", r.Reason).With("cause", r.DecisionCause()).With("violations", violations)
	}
	if pe, ok := engine.AsPlanError(err); ok {
		return out.With("rule", pe.Rule).With("code", pe.Code).With("step_id", pe.StepID)
	}
	if ge, ok := op.AsGuardError(err); ok {
		return out.With("allowed", false).With("guard", ge.Guard).With("operation", ge.Operation)
	}
	switch {
	case errors.As(err, &call):
		out.With("field", "call."+call.Field)
	case errors.As(err, &finish):
		out.Message = finish.Detail
	case errors.As(err, &effect):
		out.Message = effect.Detail
	case errors.As(err, &approval):
		out.Message = approval.Detail
	}
	return out
}
