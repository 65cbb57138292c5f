package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	quotePlan = `{"plan_id":"p1","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote","metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME"}}}]}`
	tradePlan = `{"plan_id":"p2","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":5}}}]}`
	ghostPlan = `{"plan_id":"p3","steps":[{"step_id":"step-1","agent_name":"ghost","namespace":"demo-tools","instruction":"x","metadata":{"capability":"stock_quote"}}]}`
)

// apiError is the typed error body of every non-2xx answer.
type apiErrorBody struct {
	Error map[string]any `json:"error"`
}

func TestAPI_ErrorRows(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples", "stock-agent"), "--token-file", tokenFile, "--max-body", "2048")
	auth := []string{"Authorization", "Bearer s3cret"}
	big := `{"request_id":"big","request":"` + strings.Repeat("x", 4096) + `"}`
	rows := []struct {
		name, method, path, body string
		header                   []string
		status                   int
		errType, field           string
	}{
		{"malformed JSON", "POST", "/v1/hooks/before_planning", `{"request_id":`, auth, 400, "invalid_json", ""},
		{"not JSON at all", "POST", "/v1/hooks/before_planning", `hello`, auth, 400, "invalid_json", ""},
		{"wrong type names the field", "POST", "/v1/hooks/before_planning", `{"request_id":5,"request":"x"}`, auth, 400, "invalid_field", "request_id"},
		{"wrong nested type names the field", "POST", "/v1/hooks/after_planning", `{"request_id":"r","plan":{"steps":"no"}}`, auth, 400, "invalid_field", "plan.steps"},
		{"unknown field", "POST", "/v1/hooks/before_planning", `{"request_id":"r","request":"x","tenant":"acme"}`, auth, 400, "unknown_field", "tenant"},
		{"missing field", "POST", "/v1/hooks/before_planning", `{"request_id":"r"}`, auth, 400, "missing_field", "request"},
		{"trailing data", "POST", "/v1/hooks/before_planning", `{"request_id":"r","request":"x"} {}`, auth, 400, "invalid_json", ""},
		{"oversized body", "POST", "/v1/hooks/before_planning", big, auth, 413, "body_too_large", ""},
		{"unknown execution", "GET", "/v1/executions/nope", "", auth, 404, "not_found", ""},
		{"invalid incoming plan", "POST", "/v1/hooks/after_planning", `{"request_id":"bad-plan","request":"x","plan":` + ghostPlan + `}`, auth, 422, "invalid_plan", ""},
		{"required rejection", "POST", "/v1/hooks/after_planning", `{"request_id":"trade","request":"buy","plan":` + tradePlan + `}`, auth, 403, "required_after_planning", ""},
		{"invalid operation call", "POST", "/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"r"}}`, auth, 400, "invalid_call", ""},
		{"missing token", "POST", "/v1/hooks/before_planning", `{"request_id":"r","request":"x"}`, nil, 401, "unauthorized", ""},
		{"wrong token", "GET", "/v1/status", "", []string{"Authorization", "Bearer nope"}, 401, "unauthorized", ""},
		{"unknown route", "GET", "/v2/nothing", "", auth, 404, "not_found", ""},
		{"wrong method", "GET", "/v1/hooks/before_planning", "", auth, 405, "method_not_allowed", ""},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			status, body := d.do(t, row.method, row.path, row.body, row.header...)
			if status != row.status {
				t.Fatalf("status = %d, want %d: %s", status, row.status, body)
			}
			if row.errType == "" {
				return
			}
			var e apiErrorBody
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == nil {
				t.Fatalf("body is not a typed error: %s", body)
			}
			if e.Error["type"] != row.errType {
				t.Fatalf("error type = %v, want %s: %s", e.Error["type"], row.errType, body)
			}
			if row.field != "" && e.Error["field"] != row.field {
				t.Fatalf("error field = %v, want %s: %s", e.Error["field"], row.field, body)
			}
			if msg, _ := e.Error["message"].(string); msg == "" {
				t.Fatalf("error without message: %s", body)
			}
		})
	}
	t.Run("required rejection details", func(t *testing.T) {
		_, body := d.do(t, "POST", "/v1/hooks/after_planning", `{"request_id":"trade-2","request":"buy","plan":`+tradePlan+`}`, auth...)
		var e apiErrorBody
		_ = json.Unmarshal([]byte(body), &e)
		v, _ := e.Error["violations"].([]any)
		if e.Error["hook"] != "allowed-operations" || e.Error["reason"] != "hook_error" || len(v) != 1 ||
			v[0].(map[string]any)["code"] != "capability_not_allowed" || v[0].(map[string]any)["step_id"] != "step-1" {
			t.Fatalf("rejection body = %s", body)
		}
	})
	t.Run("invalid plan names the rule", func(t *testing.T) {
		_, body := d.do(t, "POST", "/v1/hooks/after_planning", `{"request_id":"bad-plan-2","request":"x","plan":`+ghostPlan+`}`, auth...)
		var e apiErrorBody
		_ = json.Unmarshal([]byte(body), &e)
		if e.Error["rule"] != float64(2) || e.Error["code"] != "unknown_agent" || e.Error["step_id"] != "step-1" {
			t.Fatalf("invalid plan body = %s", body)
		}
	})
	t.Run("health and readiness need no token", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/readyz"} {
			if status, body := d.do(t, "GET", p, ""); status != http.StatusOK {
				t.Fatalf("%s = %d %s", p, status, body)
			}
		}
	})
	t.Run("still serving after bad input", func(t *testing.T) {
		status, body := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"after","request":"hi","metadata":{"tenant":"acme"}}`, auth...)
		if status != http.StatusOK || !strings.Contains(body, `"rag_context":"Tenant: acme"`) {
			t.Fatalf("before_planning after bad input = %d %s", status, body)
		}
		if status, body := d.do(t, "POST", "/v1/hooks/after_planning", `{"request_id":"after","plan":`+quotePlan+`}`, auth...); status != http.StatusOK {
			t.Fatalf("after_planning after bad input = %d %s", status, body)
		}
	})
}

func TestAPI_StatusAndRecords(t *testing.T) {
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples", "stock-agent"))
	status, body := d.do(t, "GET", "/v1/status", "")
	var st struct {
		Generation   string                      `json:"generation"`
		Files        []string                    `json:"files"`
		Hooks        map[string][]map[string]any `json:"hooks"`
		RequiredHook string                      `json:"required_hook"`
		Guards       []map[string]any            `json:"guards"`
		LastReload   map[string]any              `json:"last_reload"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || status != 200 {
		t.Fatalf("status = %d %s", status, body)
	}
	if !strings.HasPrefix(st.Generation, "g-") || len(st.Files) == 0 || st.RequiredHook != "allowed-operations" ||
		len(st.Hooks["before_planning"]) != 2 || len(st.Guards) != 2 || st.LastReload["result"] != "ok" {
		t.Fatalf("status body = %s", body)
	}
	d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"rec","request":"quote ACME","metadata":{"tenant":"t1"}}`)
	d.do(t, "POST", "/v1/hooks/after_planning", `{"request_id":"rec","plan":`+quotePlan+`}`)
	d.do(t, "POST", "/v1/hooks/after_execution", `{"request_id":"rec","result":{"plan_id":"p1","success":true,"steps":[]}}`)
	d.do(t, "POST", "/v1/hooks/after_synthesis", `{"request_id":"rec","response":"ok"}`)
	status, body = d.do(t, "GET", "/v1/executions/rec", "")
	var rec struct {
		Generation    string           `json:"generation"`
		Status        string           `json:"status"`
		PipelineHooks []map[string]any `json:"pipeline_hooks"`
		Phases        []map[string]any `json:"phases"`
		Revision      int              `json:"revision"`
	}
	if err := json.Unmarshal([]byte(body), &rec); err != nil || status != 200 {
		t.Fatalf("record = %d %s", status, body)
	}
	if rec.Generation != st.Generation || rec.Status != "succeeded" || len(rec.PipelineHooks) != 6 || len(rec.Phases) != 1 || rec.Revision != 4 {
		t.Fatalf("record = %s", body)
	}
	status, body = d.do(t, "GET", "/metrics", "")
	for _, m := range []string{"agentd_stage_calls_total", "agentd_stage_duration_seconds_bucket", "agentd_hook_invocations_total", "agentd_config_reloads_total"} {
		if status != 200 || !strings.Contains(body, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}
