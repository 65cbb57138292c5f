package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// TestRefusalCode_Class: every refusal code has its class, finality and retryability;
// a code this version does not know is unavailable, and retried.
func TestRefusalCode_Class(t *testing.T) {
	cases := map[engine.RefusalCode]struct {
		class            engine.RefusalClass
		final, retryable bool
	}{
		engine.RefusedNotReady:          {engine.ClassNotReady, false, false},
		engine.RefusedGenerationRetired: {engine.ClassConflict, true, false},
		engine.RefusedStoreUnavailable:  {engine.ClassUnavailable, false, true},
		engine.RefusedRequestFailed:     {engine.ClassConflict, true, false},
		engine.RefusedGenerationExpired: {engine.ClassConflict, true, false},
		engine.RefusedConflict:          {engine.ClassConflict, false, true},
		engine.RefusedTenantForbidden:   {engine.ClassForbidden, true, false},
		engine.RefusedTooLarge:          {engine.ClassTooLarge, true, false},
		"some_future_code":              {engine.ClassUnavailable, false, true},
	}
	for code, want := range cases {
		if got := code.Class(); got != want.class {
			t.Errorf("%s: class %s, want %s", code, got, want.class)
		}
		if got := code.Final(); got != want.final {
			t.Errorf("%s: final %v, want %v", code, got, want.final)
		}
		if got := code.Retryable(); got != want.retryable {
			t.Errorf("%s: retryable %v, want %v", code, got, want.retryable)
		}
	}
	if len(cases)-1 != len(engine.RefusalCodes) {
		t.Errorf("the table has %d codes, engine.RefusalCodes %d", len(cases)-1, len(engine.RefusalCodes))
	}
}

// TestRefusalCodes_ListsEveryCode: engine.RefusalCodes holds every RefusalCode constant
// declared in the package, so that a new code reaches the decision log's vocabulary
// and the class table above.
func TestRefusalCodes_ListsEveryCode(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "driver.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, c := range engine.RefusalCodes {
		listed[string(c)] = true
	}
	declared := 0
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil || identName(vs.Type) != "RefusalCode" {
			return true
		}
		for _, v := range vs.Values {
			declared++
			lit, _ := v.(*ast.BasicLit)
			if lit == nil || !listed[strings.Trim(lit.Value, `"`)] {
				t.Errorf("a RefusalCode constant (%s) is missing from engine.RefusalCodes", vs.Names[0].Name)
			}
		}
		return true
	})
	if declared != len(engine.RefusalCodes) {
		t.Errorf("driver.go declares %d refusal codes, engine.RefusalCodes lists %d", declared, len(engine.RefusalCodes))
	}
}

func identName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
