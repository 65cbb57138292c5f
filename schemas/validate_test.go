package schemas

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

func decode(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

func TestValidDocuments(t *testing.T) {
	tests := []struct {
		file   string
		schema *jsonschema.Schema
	}{
		{"hookset.yaml", HookSet()},
		{"routingplan.yaml", RoutingPlan()},
		{"hooktests.yaml", HookTests()},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			if vs := Validate(tt.schema, decode(t, filepath.Join("testdata", tt.file))); vs != nil {
				t.Errorf("Validate = %+v, want no violations", vs)
			}
		})
	}
}

// TestInvalidDocuments runs the corpus under testdata/invalid; each case lists every
// violation it must produce as "pointer keyword".
func TestInvalidDocuments(t *testing.T) {
	tests := []struct {
		file   string
		schema *jsonschema.Schema
		want   []string
	}{
		{"hookset_unknown_top_key.yaml", HookSet(), []string{"/hookz additionalProperties"}},
		{"hookset_hook_key_typo.yaml", HookSet(), []string{"/hooks/0 required", "/hooks/0/stgae additionalProperties"}},
		{"hookset_wrong_stage.yaml", HookSet(), []string{"/hooks/0/stage enum"}},
		{"hookset_two_actions.yaml", HookSet(), []string{"/hooks/0/steps/0 maxProperties"}},
		{"hookset_unknown_action.yaml", HookSet(), []string{"/hooks/0/steps/0/enrichh additionalProperties"}},
		{"hookset_enrich_missing_key.yaml", HookSet(), []string{"/hooks/0/steps/0/enrich required"}},
		{"hookset_enrich_bad_mode.yaml", HookSet(), []string{"/hooks/0/steps/0/enrich/mode enum"}},
		{"hookset_action_without_params.yaml", HookSet(), []string{"/hooks/0/steps/0/enrich type"}},
		{"hookset_empty_steps.yaml", HookSet(), []string{"/hooks/0/steps minItems"}},
		{"hookset_bad_duration.yaml", HookSet(), []string{"/hooks/0/timeout pattern"}},
		{"hookset_redact_nothing.yaml", HookSet(), []string{"/hooks/0/steps/0/redact anyOf"}},
		{"hookset_bad_hook_name.yaml", HookSet(), []string{"/hooks/0/name pattern"}},
		{"hookset_wrong_api_version.yaml", HookSet(), []string{"/apiVersion const"}},
		{"hookset_guard_deny_if_and_rego.yaml", HookSet(), []string{"/guards/rules/0/rego false"}},
		{"hookset_guard_neither.yaml", HookSet(), []string{"/guards/rules/0 oneOf"}},
		{"hookset_guard_deny_if_without_code.yaml", HookSet(), []string{"/guards/rules/0 required"}},
		{"hookset_settings_cost_zero.yaml", HookSet(), []string{"/settings/cel_cost_limit minimum"}},
		{"routingplan_unknown_top_key.yaml", RoutingPlan(), []string{"/planid additionalProperties"}},
		{"routingplan_missing_steps.yaml", RoutingPlan(), []string{" required"}},
		{"routingplan_bad_mode.yaml", RoutingPlan(), []string{"/mode enum"}},
		{"routingplan_bad_created_at.yaml", RoutingPlan(), []string{"/created_at format"}},
		{"routingplan_step_typo.yaml", RoutingPlan(), []string{"/steps/0/dependsOn additionalProperties"}},
		{"hooktests_bad_stage.yaml", HookTests(), []string{"/tests/0/stage enum"}},
		{"hooktests_expect_typo.yaml", HookTests(), []string{"/tests/0/expect/alowed additionalProperties"}},
		{"hooktests_plan_typo.yaml", HookTests(),
			[]string{"/tests/0/given/plan required", "/tests/0/given/plan/stepz additionalProperties"}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			vs := Validate(tt.schema, decode(t, filepath.Join("testdata", "invalid", tt.file)))
			var got []string
			for _, v := range vs {
				got = append(got, v.Pointer+" "+v.Keyword)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("violations = %q, want %q\n%+v", got, tt.want, vs)
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s has no case in the table", f)
		}
	}
}

func TestViolationMessages(t *testing.T) {
	hook := func(h map[string]any) map[string]any {
		return map[string]any{
			"apiVersion": "agentd.dev/v1", "kind": "HookSet", "metadata": map[string]any{"name": "m"},
			"hooks": []any{h},
		}
	}
	log := []any{map[string]any{"log": map[string]any{"message": "'x'"}}}
	tests := []struct {
		name string
		doc  any
		want []Violation
	}{
		{
			name: "missing and additional property",
			doc:  hook(map[string]any{"name": "h", "stgae": "before_planning", "steps": log}),
			want: []Violation{
				{"/hooks/0", []string{"hooks", "0"}, "required", `missing property "stage"`, nil},
				{"/hooks/0/stgae", []string{"hooks", "0", "stgae"}, "additionalProperties", `additional property "stgae" is not allowed`,
					[]string{"description", "mode", "name", "required", "stage", "steps", "timeout", "when"}},
			},
		},
		{
			name: "enum",
			doc:  hook(map[string]any{"name": "h", "stage": "later", "steps": log}),
			want: []Violation{{"/hooks/0/stage", []string{"hooks", "0", "stage"}, "enum",
				`value must be one of "before_planning", "after_planning", "after_execution", "after_synthesis"`, nil}},
		},
		{
			name: "type and pointer escaping",
			doc: hook(map[string]any{"name": "h", "stage": "before_planning",
				"steps": []any{map[string]any{"http.retrieve": map[string]any{
					"url": "u", "key": "k", "headers": map[string]any{"a/b~c": 1}}}}}),
			want: []Violation{{"/hooks/0/steps/0/http.retrieve/headers/a~1b~0c",
				[]string{"hooks", "0", "steps", "0", "http.retrieve", "headers", "a/b~c"}, "type", "expected string, got number", nil}},
		},
		{
			name: "document itself",
			doc:  []any{},
			want: []Violation{{"", []string{}, "type", "expected object, got array", nil}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Validate(HookSet(), tt.doc); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestViolationsSortArrayIndexesNumerically(t *testing.T) {
	var hooks []any
	for range 12 {
		hooks = append(hooks, map[string]any{"name": "h", "stage": "x", "steps": []any{}})
	}
	doc := map[string]any{"apiVersion": "agentd.dev/v1", "kind": "HookSet",
		"metadata": map[string]any{"name": "m"}, "hooks": hooks}
	vs := Validate(HookSet(), doc)
	if len(vs) != 24 {
		t.Fatalf("got %d violations, want 24", len(vs))
	}
	want := []string{"/hooks/0/stage", "/hooks/0/steps", "/hooks/1/stage", "/hooks/1/steps", "/hooks/2/stage"}
	for i, w := range want {
		if vs[i].Pointer != w {
			t.Errorf("violation %d at %s, want %s", i, vs[i].Pointer, w)
		}
	}
	if last := vs[len(vs)-1].Pointer; last != "/hooks/11/steps" {
		t.Errorf("last violation at %s, want /hooks/11/steps", last)
	}
}

// TestYAMLOnlyValues checks the values yaml.v3 produces that JSON has no type for.
func TestYAMLOnlyValues(t *testing.T) {
	var doc any
	src := "created_at: 2025-01-02T03:04:05Z\nsteps:\n  - metadata: {parameters: {1: one}}\n"
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	if vs := Validate(RoutingPlan(), doc); vs != nil {
		t.Errorf("Validate = %+v, want no violations", vs)
	}
}
