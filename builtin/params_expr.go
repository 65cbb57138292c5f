package builtin

import (
	"errors"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/expr"
)

// Expr compiles the CEL expression in scalar n for scope, expecting kind, and reports a
// failure at the exact position inside the file. It returns nil on failure.
func (c *Context) Expr(n *yaml.Node, field string, scope expr.Scope, kind expr.Kind) *expr.Program {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		c.add(c.Source.Errorf(diag.KindSchema, n, field, "expected a CEL expression string"))
		return nil
	}
	prg, err := c.CEL.Compile(scope, n.Value, kind)
	if err == nil {
		// call.labels, the labels flowing into the call, is a read of the flow's labels
		c.Reads.add(c.Stage, func(v string) bool { return prg.Reads(v) || v == "labels" && prg.MayRead("call", "labels") })
		return prg
	}
	var xe *diag.Error
	if !errors.As(err, &xe) {
		c.add(c.Source.Errorf(diag.KindCELTypeCheck, n, field, "%v", err))
		return nil
	}
	c.add(c.Source.ErrorAt(xe.Kind, c.Source.SnippetPos(n, xe.Line, xe.Column), field, xe.Message))
	return nil
}

// Scope is the CEL scope of a hook in the stage being compiled.
func (c *Context) Scope() expr.Scope { return expr.Scope(c.Stage) }

// Expr compiles CEL param name in its declared scope (by default the hook's stage),
// expecting its declared result type; nil when absent or invalid.
func (p *Params) Expr(name string) *expr.Program {
	d := p.decl(name, KindCEL)
	n, ok := p.values[name]
	if !ok {
		return nil
	}
	return p.ctx.Expr(n, p.field+"."+name, p.scope(d.Type), d.Type.Result)
}

func (p *Params) scope(t Type) expr.Scope {
	if t.Scope != "" {
		return t.Scope
	}
	return p.ctx.Scope()
}

// NamedProgram is one entry of a mapping of CEL expressions.
type NamedProgram struct {
	Name    string
	Program *expr.Program
}

// ExprMap compiles mapping param name of CEL expressions as Expr does, sorted by key.
func (p *Params) ExprMap(name string) []NamedProgram {
	d := p.decl(name, KindCELMap)
	n, ok := p.values[name]
	if !ok {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.Errorf(name, "%q must be a mapping of CEL expressions", name)
		return nil
	}
	out := make([]NamedProgram, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		out = append(out, NamedProgram{Name: k, Program: p.ctx.Expr(n.Content[i+1], p.field+"."+name+"."+k, p.scope(d.Type), d.Type.Result)})
	}
	slices.SortFunc(out, func(a, b NamedProgram) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}
