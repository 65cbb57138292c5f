package policy

import (
	"slices"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine/diag"
)

// disabledBuiltin reports whether name is a network built-in that policies may not call.
func disabledBuiltin(name string) bool {
	return name == "http.send" || strings.HasPrefix(name, "net.")
}

// capabilities is this OPA version's capabilities minus the disabled built-ins. It is
// built once and only ever read.
var capabilities = sync.OnceValue(func() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	caps.Builtins = slices.DeleteFunc(slices.Clone(caps.Builtins), func(b *ast.Builtin) bool {
		return disabledBuiltin(b.Name)
	})
	return caps
})

// position is a file:line:column key for matching diagnostics.
type position struct {
	file      string
	line, col int
}

func positionOf(loc *ast.Location) position {
	if loc == nil {
		return position{}
	}
	return position{file: loc.File, line: loc.Row, col: loc.Col}
}

// unsafeCalls finds every call to a disabled built-in in the parsed modules. It works on
// the parse trees, so it reports such calls even when compilation stops early; the
// compiler's own "undefined function" errors at the same positions are then dropped.
func unsafeCalls(modules []*ast.Module) (diag.List, map[position]bool) {
	var errs diag.List
	at := map[position]bool{}
	report := func(op ast.Ref, loc *ast.Location) {
		name := op.String()
		if !disabledBuiltin(name) || loc == nil {
			return
		}
		p := positionOf(loc)
		at[p] = true
		errs = append(errs, &diag.Error{
			Kind:    diag.KindRegoUnsafeBuiltin,
			File:    p.file,
			Line:    p.line,
			Column:  p.col,
			Message: "built-in " + name + " is disabled: network built-ins are not available to policies",
		})
	}
	for _, m := range modules {
		ast.WalkTerms(m, func(t *ast.Term) bool {
			if call, ok := t.Value.(ast.Call); ok && len(call) > 0 {
				if op, ok := call[0].Value.(ast.Ref); ok {
					report(op, t.Location)
				}
			}
			return false
		})
		ast.WalkExprs(m, func(e *ast.Expr) bool {
			if op := e.Operator(); e.IsCall() && op != nil {
				report(op, e.Location)
			}
			return false
		})
	}
	return errs, at
}
