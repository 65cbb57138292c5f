package builtin_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
)

// Every action is allowed exactly in its stages: a step in another stage is a load
// error at the action's key.
func TestRegistry_StagesEnforced(t *testing.T) {
	minimal := map[string]string{
		"enrich":            `{key: k, value: "1"}`,
		"short_circuit":     `{response: "'r'"}`,
		"cache.lookup":      `{key: request}`,
		"cache.store":       `{key: request}`,
		"rego":              `{query: data.agentd.plan}`,
		"plan.remove_steps": `{where: "false"}`,
		"plan.set_metadata": `{key: k, value: "1"}`,
		"redact":            `{patterns: [email]}`,
		"truncate":          `{max_bytes: 10}`,
		"http.retrieve":     `{url: "http://127.0.0.1:1/", key: k}`,
		"rate_limit":        `{key: "'k'", limit: 1, window: 1m}`,
		"effect":            `{id: e}`,
		"log":               `{message: "'m'"}`,
	}
	if got := slices.Sorted(maps.Keys(minimal)); !slices.Equal(got, builtin.Names()) {
		t.Fatalf("test table covers %v, registry has %v", got, builtin.Names())
	}
	for _, name := range builtin.Names() {
		spec, _ := builtin.Lookup(name)
		for _, stage := range engine.Stages {
			t.Run(name+"/"+string(stage), func(t *testing.T) {
				files := map[string]string{"hooks/test.yaml": hooks(`hooks:
  - name: h
    stage: ` + string(stage) + `
    steps:
      - ` + name + `: ` + minimal[name] + "\n")}
				maps.Copy(files, repoPolicies())
				gen, err := config.Load(writeConfig(t, files), config.Options{})
				if spec.AllowedIn(stage) {
					if err != nil {
						t.Fatalf("load: %v", err)
					}
					if steps := gen.Hooks[0].Steps; !slices.Equal(steps, []string{name}) {
						t.Errorf("hook steps = %v", steps)
					}
					return
				}
				list := wantLoadErrors(t, err, "invalid_params")
				e := list[0]
				if e.Line != 8 || e.Column != 9 || !strings.Contains(e.Message, fmt.Sprintf("action %q is not allowed in %s", name, stage)) {
					t.Errorf("error = %v, want one at 8:9 saying the action is not allowed", e)
				}
			})
		}
	}
}

// Param problems are load errors with the kind and the position of the offending node;
// CEL errors point inside the expression.
func TestRegistry_ParamErrors(t *testing.T) {
	tests := []struct {
		name, stage, step string
		kind              diag.Kind
		// at is the text of the step line the error points at; off moves the
		// expected column from its first byte.
		at  string
		off int
		msg string
	}{
		{"unknown action", "before_planning", `fetch: {url: x}`, "unknown_action", "fetch", 0, `unknown action "fetch"`},
		{"enum out of range", "before_planning", `enrich: {key: k, value: "1", mode: merge}`, "schema", "merge", 0, "value must be one of"},
		{"missing required param", "before_planning", `enrich: {key: k}`, "schema", "{key", 0, "value"},
		{"unknown param", "after_synthesis", `truncate: {max_bytes: 3, suffix: '', cut: 1}`, "unknown_key", "cut", 0, `"cut"`},
		{"CEL syntax", "before_planning", `enrich: {key: k, value: "request +"}`, "cel_syntax", `+"`, 1, "Syntax error"},
		{"CEL output type", "after_planning", `plan.remove_steps: {where: "size(plan.steps)"}`, "cel_type_check", "size(", 0, "want bool"},
		{"CEL variable of another stage", "before_planning", `short_circuit: {response: "response"}`, "cel_undeclared_variable", `response"`, 0, `variable "response" is not available in before_planning`},
		{"rego query naming nothing", "after_planning", `rego: {query: data.agentd.nope}`, "undefined_query", "data.agentd.nope", 0, "names no package"},
		{"rate_limit window", "before_planning", `rate_limit: {key: "'k'", limit: 1, window: 0s}`, "invalid_params", "0s", 0, "positive duration"},
		{"http.retrieve max_bytes", "before_planning", `http.retrieve: {url: "http://x/", key: k, max_bytes: 0}`, "schema", "0}", 0, "must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stepLine := "      - " + tt.step
			yaml := hooks(`hooks:
  - name: h
    stage: ` + tt.stage + `
    steps:
` + stepLine + "\n")
			_, err := config.Load(writeConfig(t, map[string]string{"hooks/test.yaml": yaml}), config.Options{})
			list := wantLoadErrors(t, err, tt.kind)
			e := list[0]
			col := strings.Index(stepLine, tt.at) + 1 + tt.off
			if e.File != "hooks/test.yaml" || e.Line != 8 || e.Column != col || !strings.Contains(e.Message, tt.msg) {
				t.Errorf("error = %v, want %s at 8:%d containing %q", e, tt.kind, col, tt.msg)
			}
		})
	}
}
