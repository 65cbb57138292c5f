package schemas

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestEverySchemaCompiles(t *testing.T) {
	want := []string{HookSetFile, HookTestsFile, RoutingPlanFile}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for name, s := range map[string]any{
		HookSetFile: HookSet(), RoutingPlanFile: RoutingPlan(), HookTestsFile: HookTests(),
	} {
		if s == nil {
			t.Errorf("%s: compiled schema is nil", name)
		}
	}
}

func TestMustCompilePanicsOnABrokenSchema(t *testing.T) {
	tests := map[string]string{
		"not json":          `{"type": `,
		"invalid keyword":   `{"type": 12}`,
		"unresolvable $ref": `{"$ref": "other.schema.json"}`,
	}
	for name, text := range tests {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "broken.schema.json") {
					t.Errorf("recover() = %v, want a panic naming broken.schema.json", r)
				}
			}()
			mustCompile(fstest.MapFS{"broken.schema.json": {Data: []byte(text)}})
		})
	}
}

func TestFile(t *testing.T) {
	b := File(HookSetFile)
	if !json.Valid(b) {
		t.Fatalf("File(%q) is not JSON", HookSetFile)
	}
	b[0] = 'X'
	if File(HookSetFile)[0] == 'X' {
		t.Errorf("File returned the embedded bytes, not a copy")
	}
	if File("nope.json") != nil {
		t.Errorf("File of an unknown name is not nil")
	}
}

// TestActionDefs checks that the step's property names and the action.* $defs list the
// same actions, and that each property refers to its $def.
func TestActionDefs(t *testing.T) {
	var doc struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(File(HookSetFile), &doc); err != nil {
		t.Fatal(err)
	}
	var step struct {
		Properties map[string]struct {
			Ref string `json:"$ref"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(doc.Defs["step"], &step); err != nil {
		t.Fatal(err)
	}
	var defs []string
	for key := range doc.Defs {
		if name, ok := strings.CutPrefix(key, "action."); ok {
			defs = append(defs, name)
		}
	}
	slices.Sort(defs)
	if steps := slices.Sorted(maps.Keys(step.Properties)); len(steps) == 0 || !slices.Equal(defs, steps) {
		t.Errorf("action.* $defs = %v, step properties = %v", defs, steps)
	}
	for name, p := range step.Properties {
		if p.Ref != "#/$defs/action."+name {
			t.Errorf("step property %q refers to %q", name, p.Ref)
		}
	}
}
