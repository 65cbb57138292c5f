package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/api"

	"github.com/agentd-dev/agentd/engine/jsonread"
)

// fastBody is a request body with a jsonread fast path (api.AfterPlanningRequest,
// api.OperationCheckRequest): ReadJSON fills it from the whole text, or reports false
// and leaves it as it was, and decodeBody then decodes the text with encoding/json.
type fastBody interface {
	ReadJSON(data []byte) bool
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
func decodeBody(r io.Reader, limit int64, v any) *api.Error {
	buf := bodyBuffers.Get().(*bytes.Buffer)
	defer recycleBody(buf)
	lr := &io.LimitedReader{R: r, N: limit + 1}
	_, err := buf.ReadFrom(lr)
	data := buf.Bytes()
	if lr.N <= 0 {
		return api.Errorf(http.StatusRequestEntityTooLarge, api.TypeBodyTooLarge, "request body exceeds %d bytes", limit).With("limit", limit)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return api.Errorf(http.StatusRequestTimeout, api.TypeRequestTimeout, "the request body did not arrive within the read timeout")
	}
	if err != nil {
		return api.Errorf(http.StatusBadRequest, api.TypeInvalidJSON, "read request body: %v", err)
	}
	if !utf8.Valid(data) {
		// encoding/json would silently replace the bad bytes; JSON text is UTF-8.
		offset := 0
		for r, n := utf8.DecodeRune(data); r != utf8.RuneError || n > 1; r, n = utf8.DecodeRune(data[offset:]) {
			offset += n
		}
		return api.Errorf(http.StatusBadRequest, api.TypeInvalidJSON, "request body is not valid UTF-8 at byte %d", offset).With("offset", offset)
	}
	if f, ok := v.(fastBody); ok && f.ReadJSON(data) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil {
		if at := jsonread.Trailing(data, dec.InputOffset()); at >= 0 {
			return api.Errorf(http.StatusBadRequest, api.TypeInvalidJSON, "request body goes on after its JSON value, at byte %d", at).With("offset", at)
		}
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return api.Errorf(http.StatusBadRequest, api.TypeInvalidJSON, "request body is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return api.Errorf(http.StatusBadRequest, api.TypeInvalidJSON, "request body is truncated JSON")
	case errors.As(err, &syn):
		return api.Errorf(http.StatusBadRequest, api.TypeInvalidJSON, "malformed JSON at byte %d: %v", syn.Offset, syn).With("offset", syn.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(body)"
		}
		return api.Errorf(http.StatusBadRequest, api.TypeInvalidField, "field %q must be %s, got JSON %s", field, jsonKind(typ.Type.String()), typ.Value).With("field", field)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for DisallowUnknownFields; its text is stable.
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return api.Errorf(http.StatusBadRequest, api.TypeUnknownField, "unknown field %q", field).With("field", field)
	}
	return api.Errorf(http.StatusBadRequest, api.TypeInvalidJSON, "invalid request body: %v", err)
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

func missing(field string) *api.Error {
	return api.Errorf(http.StatusBadRequest, api.TypeMissingField, "field %q is required", field).With("field", field)
}
