package openai

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentd-dev/agentd/api"
)

// Error types of the gateway's OpenAI-shaped errors. Clients match on type and code,
// never on message.
const (
	typeInvalidRequest  = "invalid_request_error"
	typeNotFound        = "not_found_error"
	typePolicyViolation = "policy_violation"
	typeUpstream        = "upstream_error"
	typeServer          = "server_error"
	typePermission      = "permission_error"
)

// Error codes.
const (
	codeInvalidJSON          = "invalid_json"
	codeInvalidMessages      = "invalid_messages"
	codeInvalidField         = "invalid_field"
	codeAmbiguousMembers     = "ambiguous_members"
	codeBodyTooLarge         = "body_too_large"
	codeNotConfigured        = "gateway_not_configured"
	codeMisconfigured        = "gateway_misconfigured"
	codeUnreachable          = "upstream_unreachable"
	codeTimeout              = "upstream_timeout"
	codeMalformed            = "upstream_malformed"
	codeUpstreamError        = "upstream_error"
	codeRequiredAfterPlan    = "required_after_planning"
	codeInvalidPlan          = "invalid_plan"
	codeInvalidToolArguments = "invalid_tool_arguments"
	codeToolCallsDenied      = "tool_calls_denied"
	codeInternal             = "internal"
)

// apiError is an error answered as {"error": {"message", "type", "param", "code", ...}},
// the shape OpenAI clients decode.
type apiError struct {
	Status  int
	Type    string
	Code    string
	Param   string
	Message string
	// Details are further members of the error object (hook, violations, denials).
	Details map[string]any
	// raw, when set, is answered instead: an upstream's JSON error body passed through
	// (scrubbed, see exchange.errorBody).
	raw json.RawMessage
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// MarshalJSON renders the error body.
func (e *apiError) MarshalJSON() ([]byte, error) {
	body := make(map[string]any, len(e.Details)+4)
	for k, v := range e.Details {
		body[k] = v
	}
	body["message"], body["type"], body["code"] = e.Message, e.Type, e.Code
	body["param"] = nil
	if e.Param != "" {
		body["param"] = e.Param
	}
	return json.Marshal(map[string]any{"error": body})
}

func newError(status int, typ, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Type: typ, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(code, param, format string, args ...any) *apiError {
	e := newError(http.StatusBadRequest, typeInvalidRequest, code, format, args...)
	e.Param = param
	return e
}

// driverError translates a refusal or failure of the request driver: the status,
// code and message are api.ErrorOf's (the one mapping the stage API answers with
// too), in the OpenAI error shape whose type the status selects (errorType).
func driverError(err error) *apiError {
	e := api.ErrorOf(err)
	return &apiError{Status: e.Status, Type: errorType(e.Status), Code: string(e.Type), Message: e.Message}
}

// errorType is the OpenAI error type of an HTTP status: permission_error for 403 (which
// OpenAI's SDKs raise as PermissionDeniedError and do not retry), server_error for a
// 5xx, invalid_request_error otherwise.
func errorType(status int) string {
	switch {
	case status == http.StatusForbidden:
		return typePermission
	case status >= http.StatusInternalServerError:
		return typeServer
	}
	return typeInvalidRequest
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.raw == nil {
		writeJSON(w, e.Status, e)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.raw)
}
