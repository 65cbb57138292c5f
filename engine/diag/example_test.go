package diag_test

import (
	"fmt"
	"os"
	"slices"

	"github.com/agentd-dev/agentd/engine/diag"
)

func ExampleList_Render() {
	src := map[string]string{"hooks/cache.yaml": "hooks:\n  - name: cache\n    stgae: before_planning\n"}
	errs := diag.List{
		{Kind: diag.KindUnknownKey, File: "hooks/cache.yaml", Line: 3, Column: 5, Message: `unknown key "stgae"`},
		{Kind: diag.KindSchema, File: "hooks/cache.yaml", Line: 2, Column: 5, Message: `missing property "stage"`},
	}.Normalize(100)
	errs.Render(os.Stdout, func(file string) ([]byte, bool) {
		s, ok := src[file]
		return []byte(s), ok
	})
	// Output:
	// hooks/cache.yaml:2:5: schema: missing property "stage"
	//  |   - name: cache
	//  |     ^
	// hooks/cache.yaml:3:5: unknown_key: unknown key "stgae"
	//  |     stgae: before_planning
	//  |     ^
}

// A CEL error at line 2, column 3 of a block scalar maps to the file like this.
func ExamplePos_AdvanceIndented() {
	src := []byte("hooks:\n  - when: |\n      has(metadata.tenant) &&\n        metadata.tenant != ''\n")
	start, indent, _ := diag.BlockScalar(src, 2) // yaml.v3 reports the node at the "|" line
	pos := start.AdvanceIndented(2, 3, indent)
	e := &diag.Error{Kind: diag.KindCELTypeCheck, File: "hooks/a.yaml", Line: pos.Line, Column: pos.Column, Message: "..."}
	os.Stdout.WriteString(e.Error() + "\n")
	// Output:
	// hooks/a.yaml:4:9: cel_type_check: ...
}

// A caller matches a load's errors on their kinds, never on their messages.
func ExampleAsList() {
	var err error = fmt.Errorf("load: %w", diag.List{
		{Kind: diag.KindCELSyntax, File: "hooks/a.yaml", Line: 4, Column: 9, Message: "mismatched input"},
		{Kind: diag.KindUndefinedQuery, File: "hooks/b.yaml", Line: 7, Column: 16, Message: "query data.x names no package"},
	})
	if list, ok := diag.AsList(err); ok {
		fmt.Println(list.Kinds(), slices.Contains(list.Kinds(), diag.KindCELSyntax))
	}
	// Output:
	// [cel_syntax undefined_query] true
}
