package schemas_test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/engine/policy"
	"github.com/agentd-dev/agentd/schemas"
)

// The defaults the schema and the README state for settings are the engine's.
func TestSettings_DefaultsAreTheEngines(t *testing.T) {
	var doc struct {
		Properties struct {
			Settings struct {
				Properties map[string]struct {
					Description string `json:"description"`
					Default     any    `json:"default"`
				} `json:"properties"`
			} `json:"settings"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schemas.File(schemas.HookSetFile), &doc); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	prose := strings.Join(strings.Fields(string(readme)), " ")
	tests := []struct {
		setting string
		value   any // as JSON decodes it
		text    string
	}{
		{"cel_cost_limit", float64(expr.DefaultCostLimit), thousands(expr.DefaultCostLimit)},
		{"rego_timeout", policy.DefaultTimeout.String(), policy.DefaultTimeout.String()},
	}
	for _, tt := range tests {
		s := doc.Properties.Settings.Properties[tt.setting]
		if s.Default != tt.value {
			t.Errorf("schema: settings.%s default = %v, want %v", tt.setting, s.Default, tt.value)
		}
		if !strings.HasSuffix(s.Description, "default "+tt.text+".") {
			t.Errorf("schema: settings.%s description %q does not end with %q", tt.setting, s.Description, "default "+tt.text+".")
		}
		if want := tt.setting + "`, default " + tt.text + ")"; !strings.Contains(prose, want) {
			t.Errorf("README.md does not state %q", want)
		}
	}
}

// thousands writes n with a comma between groups of three digits.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
