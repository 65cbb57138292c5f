package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/api"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// TestStatusOf: each kind of engine error has its status and code, wrapped or not;
// every refusal code maps through its class, and tenant_forbidden is 403.
func TestStatusOf(t *testing.T) {
	cases := map[string]struct {
		err    error
		status int
		code   string
	}{
		"not ready":          {&engine.RefusalError{Code: engine.RefusedNotReady}, 503, "not_ready"},
		"generation retired": {&engine.RefusalError{Code: engine.RefusedGenerationRetired}, 409, "generation_retired"},
		"generation expired": {&engine.RefusalError{Code: engine.RefusedGenerationExpired}, 409, "generation_expired"},
		"request failed":     {&engine.RefusalError{Code: engine.RefusedRequestFailed}, 409, "request_failed"},
		"conflict":           {&engine.RefusalError{Code: engine.RefusedConflict}, 409, "conflict"},
		"tenant forbidden":   {&engine.RefusalError{Code: engine.RefusedTenantForbidden}, 403, "tenant_forbidden"},
		"too large":          {&engine.RefusalError{Code: engine.RefusedTooLarge}, 413, "request_too_large"},
		"store unavailable":  {&engine.RefusalError{Code: engine.RefusedStoreUnavailable, Err: errors.New("dial tcp: refused")}, 503, "store_unavailable"},
		"wrapped refusal":    {fmt.Errorf("open: %w", &engine.RefusalError{Code: engine.RefusedTenantForbidden}), 403, "tenant_forbidden"},
		"guard error":        {&op.GuardError{Guard: "g", Operation: op.ToolCall, Cause: errors.New("boom")}, 403, "guard_error"},
		"invalid call":       {&op.CallError{Field: "step_id", Reason: "missing"}, 400, "invalid_call"},
		"invalid finish":     {&engine.FinishError{Code: engine.FinishInvalid, Detail: "x"}, 400, "invalid_finish"},
		"finish not started": {&engine.FinishError{Code: "not_started", Detail: "x"}, 409, "not_started"},
		"invalid effect":     {&engine.EffectError{Code: engine.UpdateInvalidEffect, Detail: "x"}, 400, "invalid_effect"},
		"terminal effect":    {&engine.EffectError{Code: engine.UpdateTerminalEffect, Detail: "x"}, 409, "effect_terminal"},
		"unknown effect":     {&engine.EffectError{Code: "unknown_effect", Detail: "x"}, 404, "unknown_effect"},
		"api error":          {api.Errorf(http.StatusTeapot, "teapot", "short and stout"), 418, "teapot"},
		"anything else":      {errors.New("boom"), 500, "internal"},
	}
	for name, c := range cases {
		status, code := api.StatusOf(c.err)
		if status != c.status || code != c.code {
			t.Errorf("%s: StatusOf = %d %s, want %d %s", name, status, code, c.status, c.code)
		}
		if e := api.ErrorOf(c.err); e.Status != c.status || string(e.Type) != c.code {
			t.Errorf("%s: ErrorOf = %d %s, want %d %s", name, e.Status, e.Type, c.status, c.code)
		}
	}
	for _, code := range engine.RefusalCodes {
		if status, got := api.StatusOf(&engine.RefusalError{Code: code}); status < 400 || got != string(code) {
			t.Errorf("refusal %s: StatusOf = %d %s", code, status, got)
		}
	}
}

// TestErrorOf_HidesStoreCauses: a store failure's cause is for logs, not clients.
func TestErrorOf_HidesStoreCauses(t *testing.T) {
	e := api.ErrorOf(&engine.RefusalError{Code: engine.RefusedStoreUnavailable, Err: errors.New("dial tcp 10.0.0.7:6379")})
	if strings.Contains(e.Message, "10.0.0.7") {
		t.Errorf("the message tells the store's cause: %q", e.Message)
	}
}

// TestError_RoundTrips: an error body decodes into the Error it was encoded from (but
// Status, which is not in the body), and a decoded refusal knows its class.
func TestError_RoundTrips(t *testing.T) {
	in := api.ErrorOf(&engine.RefusalError{Code: engine.RefusedGenerationRetired, Generation: "g1", RequestID: "r"})
	data, err := in.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var out api.Error
	if err := out.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	if out.Type != in.Type || out.Message != in.Message || out.Details["generation"] != "g1" {
		t.Errorf("decoded %+v from %s", out, data)
	}
	if class, ok := out.RefusalClass(); !ok || class != engine.ClassConflict || out.Retryable() {
		t.Errorf("class %s %v, retryable %v", class, ok, out.Retryable())
	}
	if err := out.UnmarshalJSON([]byte(`{"status":"ok"}`)); err == nil {
		t.Error("a body without an error object decoded")
	}
}

// refusalMapping finds a mapping of refusal codes: a switch case or a map key naming
// a refusal code or class.
var refusalMapping = regexp.MustCompile(`(case\s[^:]*engine\.(Refused|Class)[A-Z]|engine\.(Refused|Class)[A-Za-z]+\s*:)`)

// TestRefusals_MappedOnlyInEngineAndAPI: no Go file outside engine/ and api/ switches
// on refusal codes or classes or keys a map by them; every adapter answers through
// api.StatusOf.
func TestRefusals_MappedOnlyInEngineAndAPI(t *testing.T) {
	root := ".."
	var found []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "engine", "api", ".git", "tools", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if refusalMapping.MatchString(line) {
				found = append(found, fmt.Sprintf("%s:%d: %s", rel, i+1, strings.TrimSpace(line)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("refusal codes mapped outside engine/ and api/: %s", f)
	}
	if !refusalMapping.MatchString("\tcase engine.RefusedConflict, engine.RefusedTooLarge:") ||
		!refusalMapping.MatchString("\tengine.ClassForbidden: http.StatusForbidden,") {
		t.Error("the pattern misses a mapping")
	}
}
