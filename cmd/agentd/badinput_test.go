package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// badInput is one entry of the bad-input catalogue: a body the API must refuse with a
// typed 4xx (status, error type and, where there is one, the field it names).
type badInput struct {
	name, path, body string
	status           int
	errType, field   string
}

func nested(open, close string, depth int, inner string) string {
	return strings.Repeat(open, depth) + inner + strings.Repeat(close, depth)
}

func badInputCatalogue() []badInput {
	const bp, ap, ae, as, op = "/v1/hooks/before_planning", "/v1/hooks/after_planning", "/v1/hooks/after_execution", "/v1/hooks/after_synthesis", "/v1/operations/check"
	deepObject := nested(`{"a":`, `}`, 10_000, `1`)
	deepArray := nested(`[`, `]`, 10_000, ``)
	return []badInput{
		// malformed
		{"empty body", bp, ``, 400, "invalid_json", ""},
		{"truncated object", bp, `{"request_id":"r","request":"x"`, 400, "invalid_json", ""},
		{"missing colon", bp, `{"request_id" "r"}`, 400, "invalid_json", ""},
		{"trailing comma", bp, `{"request_id":"r","request":"x",}`, 400, "invalid_json", ""},
		{"single quotes", bp, `{'request_id':'r'}`, 400, "invalid_json", ""},
		{"bare word", ap, `plan`, 400, "invalid_json", ""},
		{"two values", as, `{"request_id":"r","response":"x"}{"request_id":"r"}`, 400, "invalid_json", ""},
		{"a stray brace after the value", ap, `{"request_id":"r","plan":{}}}`, 400, "invalid_json", ""},
		{"a stray bracket after the value", bp, `{"request_id":"r","request":"x"} ]`, 400, "invalid_json", ""},
		{"control character in string", bp, "{\"request_id\":\"r\",\"request\":\"a\x01b\"}", 400, "invalid_json", ""},
		{"bad escape", bp, `{"request_id":"r","request":"\q"}`, 400, "invalid_json", ""},
		{"NaN", ap, `{"request_id":"r","phase":NaN,"plan":{}}`, 400, "invalid_json", ""},
		// oversized
		{"oversized string", bp, `{"request_id":"big","request":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "body_too_large", ""},
		{"oversized metadata", bp, `{"request_id":"big","request":"x","metadata":{` + strings.Repeat(`"k":1,`, 400_000) + `"z":1}}`, 413, "body_too_large", ""},
		{"oversized whitespace", bp, strings.Repeat(" ", 2<<20) + `{}`, 413, "body_too_large", ""},
		// deeply nested (10k levels)
		{"object nested 10k levels in metadata", bp, `{"request_id":"deep","request":"x","metadata":` + deepObject + `}`, 400, "invalid_json", ""},
		{"array nested 10k levels in parameters", op, `{"operation":"tool_call","call":{"request_id":"deep","parameters":{"a":` + deepArray + `}}}`, 400, "invalid_json", ""},
		{"body nested 10k levels", ae, deepArray, 400, "invalid_field", "(body)"},
		// invalid UTF-8
		{"invalid UTF-8 in request", bp, "{\"request_id\":\"r\",\"request\":\"caf\xe9\"}", 400, "invalid_json", ""},
		{"invalid UTF-8 in a metadata key", bp, "{\"request_id\":\"r\",\"request\":\"x\",\"metadata\":{\"\xff\xfe\":1}}", 400, "invalid_json", ""},
		{"truncated UTF-8 sequence", as, "{\"request_id\":\"r\",\"response\":\"\xe2\x82\"}", 400, "invalid_json", ""},
		{"UTF-16 body", bp, "\xff\xfe{\x00}\x00", 400, "invalid_json", ""},
		// huge numbers
		{"1e400 as phase", ap, `{"request_id":"r","phase":1e400,"plan":{}}`, 400, "invalid_field", "phase"},
		{"30-digit integer as phase", ap, `{"request_id":"r","phase":123456789012345678901234567890,"plan":{}}`, 400, "invalid_field", "phase"},
		{"1e400 in metadata", bp, `{"request_id":"r","request":"x","metadata":{"n":1e400}}`, 400, "invalid_field", "metadata"},
		{"1e400 as a trade amount", op, `{"operation":"tool_call","call":{"request_id":"r","step_id":"s","agent_name":"a","capability":"execute_trade","parameters":{"amount":1e400}}}`, 400, "invalid_field", "call.parameters"},
		{"30-digit integer as a duration", ae, `{"request_id":"r","result":{"plan_id":"p","success":true,"steps":[],"total_duration":123456789012345678901234567890}}`, 400, "invalid_field", "result.total_duration"},
		{"negative 30-digit phase number", ap, `{"request_id":"r","plan":{"phase_number":-123456789012345678901234567890,"steps":[]}}`, 400, "invalid_field", "plan.phase_number"},
		// wrong types
		{"body is an array", bp, `[1,2,3]`, 400, "invalid_field", "(body)"},
		{"body is a string", bp, `"hello"`, 400, "invalid_field", "(body)"},
		{"request_id is a number", bp, `{"request_id":42,"request":"x"}`, 400, "invalid_field", "request_id"},
		{"request is an object", bp, `{"request_id":"r","request":{"text":"x"}}`, 400, "invalid_field", "request"},
		{"metadata is a string", bp, `{"request_id":"r","request":"x","metadata":"tenant=acme"}`, 400, "invalid_field", "metadata"},
		{"cache_vary value is a number", bp, `{"request_id":"r","request":"x","cache_vary":{"locale":1}}`, 400, "invalid_field", "cache_vary"},
		{"cache_read_disabled is a string", bp, `{"request_id":"r","request":"x","cache_read_disabled":"yes"}`, 400, "invalid_field", "cache_read_disabled"},
		{"plan is an array", ap, `{"request_id":"r","plan":[]}`, 400, "invalid_field", "plan"},
		{"step is a string", ap, `{"request_id":"r","plan":{"steps":["step-1"]}}`, 400, "invalid_field", "plan.steps"},
		{"result success is a string", ae, `{"request_id":"r","result":{"success":"true"}}`, 400, "invalid_field", "result.success"},
		{"response is a number", as, `{"request_id":"r","response":42}`, 400, "invalid_field", "response"},
		{"call is a string", op, `{"operation":"tool_call","call":"buy"}`, 400, "invalid_field", "call"},
		{"phase is a float", ap, `{"request_id":"r","phase":1.5,"plan":{}}`, 400, "invalid_field", "phase"},
		// missing and unknown
		{"null body", bp, `null`, 400, "missing_field", "request"},
		{"null request", bp, `{"request_id":"r","request":null}`, 400, "missing_field", "request"},
		{"unknown nested field", ap, `{"request_id":"r","plan":{"steps":[],"owner":"me"}}`, 400, "unknown_field", "owner"},
		{"unknown operation", op, `{"operation":"teleport","call":{"request_id":"r"}}`, 400, "invalid_call", ""},
	}
}

// TestBadInput_Catalogue sends every entry of the catalogue to the real daemon: each
// gets its typed 4xx, and the daemon keeps answering after every one.
func TestBadInput_Catalogue(t *testing.T) {
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples", "stock-agent"))
	for _, c := range badInputCatalogue() {
		t.Run(c.name, func(t *testing.T) {
			status, data, err := d.try(http.MethodPost, c.path, c.body)
			if err != nil {
				t.Fatalf("POST %s: %v", c.path, err)
			}
			var e apiErrorBody
			if json.Unmarshal(data, &e) != nil || e.Error == nil {
				t.Fatalf("answer %d is not a typed error: %.300s", status, data)
			}
			if status != c.status || e.Error["type"] != c.errType {
				t.Fatalf("answer = %d %v, want %d %s: %.300s", status, e.Error["type"], c.status, c.errType, data)
			}
			if c.field != "" && e.Error["field"] != c.field {
				t.Fatalf("field = %v, want %s: %.300s", e.Error["field"], c.field, data)
			}
			if status, _, err := d.try(http.MethodGet, "/healthz", ""); err != nil || status != 200 {
				t.Fatalf("/healthz after bad input = %d %v", status, err)
			}
		})
	}
	if status, body := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"after-bad","request":"hi","metadata":{"tenant":"acme"}}`); status != 200 {
		t.Fatalf("before_planning after the catalogue = %d %s", status, body)
	}
	if status, body := d.do(t, "POST", "/v1/hooks/after_planning", `{"request_id":"after-bad","plan":`+quotePlan+`}`); status != 200 {
		t.Fatalf("after_planning after the catalogue = %d %s", status, body)
	}
}

// Valid JSON that is merely unusual is not bad input: it is accepted as JSON says.
func TestBadInput_UnusualButValidJSON(t *testing.T) {
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples", "stock-agent"))
	for name, body := range map[string]string{
		"30-digit integer in metadata (a JSON number)": `{"request_id":"u1","request":"x","metadata":{"n":123456789012345678901234567890}}`,
		"escaped NUL and lone surrogate in request":    `{"request_id":"u2","request":"a\u0000b\ud800"}`,
		"metadata nested 200 levels":                   `{"request_id":"u3","request":"x","metadata":` + nested(`{"a":`, `}`, 200, `1`) + `}`,
		"multi-byte UTF-8 everywhere":                  `{"request_id":"ü-😀","request":"日本語のリクエスト","metadata":{"tenant":"ümlaut"}}`,
		"duplicate key (the last one wins, as in Go)":  `{"request_id":"u5","request":"first","request":"second"}`,
	} {
		t.Run(name, func(t *testing.T) {
			if status, body := d.do(t, "POST", "/v1/hooks/before_planning", body); status != 200 {
				t.Fatalf("answer = %d %.300s", status, body)
			}
		})
	}
}
