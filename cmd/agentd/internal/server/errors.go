package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/engine/jsonread"
)

// ErrorType is the type of an API error body. Clients match on type, never on message.
type ErrorType string

// Error types of the API.
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
	TypeInternal              ErrorType = "internal"
)

// APIError is an error answered as `{"error": {"type", "message", ...details}}` with
// Status.
type APIError struct {
	Status  int
	Type    ErrorType
	Message string
	Details map[string]any
}

func (e *APIError) Error() string { return string(e.Type) + ": " + e.Message }

// MarshalJSON renders the error body.
func (e *APIError) MarshalJSON() ([]byte, error) {
	body := make(map[string]any, len(e.Details)+2)
	for k, v := range e.Details {
		body[k] = v
	}
	body["type"], body["message"] = e.Type, e.Message
	return json.Marshal(map[string]any{"error": body})
}

func apiError(status int, typ ErrorType, format string, args ...any) *APIError {
	return &APIError{Status: status, Type: typ, Message: fmt.Sprintf(format, args...)}
}

func (e *APIError) with(k string, v any) *APIError {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[k] = v
	return e
}

// bodyBuffers recycle the buffers decodeBody reads bodies into: decoding copies every
// value out of the bytes, so a buffer is free again once decodeBody returns.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody bounds the buffers kept for reuse, so that one large body does not
// stay allocated.
const maxPooledBody = 64 << 10

func recycleBody(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBody {
		buf.Reset()
		bodyBuffers.Put(buf)
	}
}

// decodeBody decodes exactly one JSON object from r into v, strictly: unknown fields,
// wrong types, trailing data, invalid UTF-8 and bodies over limit bytes are typed 4xx
// errors naming the offending field where there is one.
func decodeBody(r io.Reader, limit int64, v any) *APIError {
	buf := bodyBuffers.Get().(*bytes.Buffer)
	defer recycleBody(buf)
	lr := &io.LimitedReader{R: r, N: limit + 1}
	_, err := buf.ReadFrom(lr)
	data := buf.Bytes()
	if lr.N <= 0 {
		return apiError(http.StatusRequestEntityTooLarge, TypeBodyTooLarge, "request body exceeds %d bytes", limit).with("limit", limit)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return apiError(http.StatusRequestTimeout, TypeRequestTimeout, "the request body did not arrive within the read timeout")
	}
	if err != nil {
		return apiError(http.StatusBadRequest, TypeInvalidJSON, "read request body: %v", err)
	}
	if !utf8.Valid(data) {
		// encoding/json would silently replace the bad bytes; JSON text is UTF-8.
		offset := 0
		for r, n := utf8.DecodeRune(data); r != utf8.RuneError || n > 1; r, n = utf8.DecodeRune(data[offset:]) {
			offset += n
		}
		return apiError(http.StatusBadRequest, TypeInvalidJSON, "request body is not valid UTF-8 at byte %d", offset).with("offset", offset)
	}
	if f, ok := v.(fastBody); ok && f.readJSON(data) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil {
		if at := jsonread.Trailing(data, dec.InputOffset()); at >= 0 {
			return apiError(http.StatusBadRequest, TypeInvalidJSON, "request body goes on after its JSON value, at byte %d", at).with("offset", at)
		}
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return apiError(http.StatusBadRequest, TypeInvalidJSON, "request body is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apiError(http.StatusBadRequest, TypeInvalidJSON, "request body is truncated JSON")
	case errors.As(err, &syn):
		return apiError(http.StatusBadRequest, TypeInvalidJSON, "malformed JSON at byte %d: %v", syn.Offset, syn).with("offset", syn.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(body)"
		}
		return apiError(http.StatusBadRequest, TypeInvalidField, "field %q must be %s, got JSON %s", field, jsonKind(typ.Type.String()), typ.Value).with("field", field)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for DisallowUnknownFields; its text is stable.
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return apiError(http.StatusBadRequest, TypeUnknownField, "unknown field %q", field).with("field", field)
	}
	return apiError(http.StatusBadRequest, TypeInvalidJSON, "invalid request body: %v", err)
}

// jsonKind names a Go type the way an API client thinks of it.
func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "struct"), strings.Contains(goType, "."):
		return "an object"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "float"):
		return "a number"
	}
	return goType
}

func missing(field string) *APIError {
	return apiError(http.StatusBadRequest, TypeMissingField, "field %q is required", field).with("field", field)
}
