package builtin

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/engine/policy"
)

// Context is what compiling the steps of one hook needs.
type Context struct {
	Stage engine.Stage
	Hook  string
	CEL   *expr.Compiler
	// Rego is the compiled policy bundle; nil when there is none, and RegoFailed says
	// whether that is because the policies failed to compile (already reported).
	Rego       *policy.Bundle
	RegoFailed bool
	Services   Services
	Source     *Source
	Errors     *diag.List
	// Queries collects the data reference of every Rego query prepared; nil collects
	// nothing.
	Queries *[]string
	// Reads collects which payload variables (PayloadVariables) some expression or
	// query compiled for Stage may read; nil collects nothing.
	Reads InputReads
}

// PayloadVariables are the request's payload as hooks and guards see it, what a
// source of recorded decisions (agentd replay) may lack.
var PayloadVariables = []string{"request", "metadata", "enrichments"}

// FlowVariables are the request's information flow as hooks and guards see it
// (docs/semantics.md §8.21): its labels (CEL labels and call.labels, Rego input.labels)
// and its history. InputReads records them beside the payload variables: agentd probe
// tries label combinations where they are read. They are not payload: replay's
// check of what a source kept covers PayloadVariables only.
var FlowVariables = []string{"labels", "history"}

// InputReads says, per stage (the empty stage for the guards), which payload variables
// and flow variables (FlowVariables) some compiled expression or query may read.
type InputReads map[engine.Stage]map[string]bool

// May reports whether something compiled for stage may read variable.
func (r InputReads) May(stage engine.Stage, variable string) bool { return r[stage][variable] }

func (r InputReads) add(stage engine.Stage, reads func(string) bool) {
	if r == nil {
		return
	}
	for _, v := range slices.Concat(PayloadVariables, FlowVariables) {
		if reads(v) {
			if r[stage] == nil {
				r[stage] = map[string]bool{}
			}
			r[stage][v] = true
		}
	}
}

// Params gives an action's Compile typed, position-aware access to its params, each read
// as its Param declares it. An accessor returns the declared default when the param is
// absent; a value that breaks the declaration is reported once, at the offending node,
// and read as the default (or the zero value when there is none).
type Params struct {
	ctx    *Context
	spec   *Spec
	node   *yaml.Node
	field  string
	values map[string]*yaml.Node
}

// CompileStep compiles one step node, a mapping with exactly one key naming the action
// and its params as the value. Problems are appended to c.Errors; the result is nil
// when there were any.
func CompileStep(c *Context, step *yaml.Node, field string) Action {
	if step.Kind != yaml.MappingNode || len(step.Content) != 2 {
		c.add(c.Source.Errorf(diag.KindSchema, step, field, "a step is a mapping with exactly one action"))
		return nil
	}
	key, params := step.Content[0], step.Content[1]
	spec, ok := Lookup(key.Value)
	if !ok {
		c.add(c.Source.Errorf(diag.KindUnknownAction, key, field, "unknown action %q%s (known: %s)", key.Value, diag.DidYouMean(key.Value, Names()), strings.Join(Names(), ", ")))
		return nil
	}
	field += "." + key.Value
	if !spec.AllowedIn(c.Stage) {
		c.add(c.Source.Errorf(diag.KindInvalidParams, key, field, "action %q is not allowed in %s (allowed in %s)", spec.Name, c.Stage, stageList(spec.Stages)))
		return nil
	}
	p := &Params{ctx: c, spec: spec, node: params, field: field, values: map[string]*yaml.Node{}}
	if !p.index() {
		return nil
	}
	before := len(*c.Errors)
	action := spec.Compile(p)
	if len(*c.Errors) > before {
		return nil
	}
	return action
}

func stageList(stages []engine.Stage) string {
	parts := make([]string, len(stages))
	for i, s := range stages {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

func (c *Context) add(e *diag.Error) { *c.Errors = append(*c.Errors, e) }

// index checks the params mapping's keys against the spec.
func (p *Params) index() bool {
	ok := true
	switch {
	case p.node.Kind == yaml.ScalarNode && p.node.Tag == "!!null":
	case p.node.Kind != yaml.MappingNode:
		p.ctx.add(p.ctx.Source.Errorf(diag.KindInvalidParams, p.node, p.field, "params of %q must be a mapping", p.spec.Name))
		return false
	}
	for i := 0; i+1 < len(p.node.Content); i += 2 {
		k, v := p.node.Content[i], p.node.Content[i+1]
		if _, known := p.spec.param(k.Value); !known {
			p.ctx.add(p.ctx.Source.Errorf(diag.KindUnknownKey, k, p.field+"."+k.Value, "unknown param %q of %q%s (params: %s)", k.Value, p.spec.Name, diag.DidYouMean(k.Value, p.spec.paramNames()), strings.Join(p.spec.paramNames(), ", ")))
			ok = false
			continue
		}
		p.values[k.Value] = v
	}
	for _, param := range p.spec.Params {
		if _, has := p.values[param.Name]; param.Required && !has {
			p.ctx.add(p.ctx.Source.Errorf(diag.KindInvalidParams, p.node, p.field, "%q needs param %q", p.spec.Name, param.Name))
			ok = false
		}
	}
	if names := p.spec.RequireAny; len(names) > 0 && !slices.ContainsFunc(names, p.Has) {
		quoted := make([]string, len(names))
		for i, name := range names {
			quoted[i] = strconv.Quote(name)
		}
		p.ctx.add(p.ctx.Source.Errorf(diag.KindInvalidParams, p.node, p.field, "%q needs param %s", p.spec.Name, strings.Join(quoted, " or ")))
		ok = false
	}
	return ok
}

// Hook is the name of the hook being compiled.
func (p *Params) Hook() string { return p.ctx.Hook }

// Services are the run-time dependencies.
func (p *Params) Services() Services { return p.ctx.Services }

// Has reports whether param name was given.
func (p *Params) Has(name string) bool { _, ok := p.values[name]; return ok }

// Errorf reports a problem at param name (or at the params when it is absent).
func (p *Params) Errorf(name, format string, args ...any) {
	node, ok := p.values[name]
	if !ok {
		node = p.node
	}
	p.ctx.add(p.ctx.Source.Errorf(diag.KindInvalidParams, node, p.field+"."+name, format, args...))
}

// decl returns the declaration of param name, which the action must have declared with
// one of kinds: reading an undeclared param, or reading it as another kind, is a
// programming error in the action and panics.
func (p *Params) decl(name string, kinds ...Kind) Param {
	d, ok := p.spec.param(name)
	if !ok || !slices.Contains(kinds, d.Type.Kind) {
		panic(fmt.Sprintf("builtin: action %s reads param %q as %v, but declares it %q", p.spec.Name, name, kinds, d.Type.Kind))
	}
	return d
}

func (p *Params) scalar(name, what string) (*yaml.Node, bool) {
	n, ok := p.values[name]
	if !ok {
		return nil, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.Errorf(name, "%q must be %s", name, what)
		return nil, false
	}
	return n, true
}

// String returns string param name, or its default when absent. A required string
// must not be empty.
func (p *Params) String(name string) string {
	d := p.decl(name, KindString)
	def, _ := d.Default.(string)
	n, ok := p.scalar(name, "a string")
	if !ok {
		return def
	}
	if d.Required && n.Value == "" {
		p.Errorf(name, "%q must not be empty", name)
	}
	return n.Value
}

// Int returns integer param name, or its default when absent or invalid. It must be at
// least the declared minimum.
func (p *Params) Int(name string) int {
	d := p.decl(name, KindInt)
	def, _ := d.Default.(int)
	n, ok := p.scalar(name, "an integer")
	if !ok {
		return def
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil || n.Tag != "!!int" {
		p.Errorf(name, "%q must be an integer, got %q", name, n.Value)
		return def
	}
	if v < d.Type.Min {
		p.Errorf(name, "%q must be at least %d, got %d", name, d.Type.Min, v)
		return def
	}
	return v
}

// Bool returns boolean param name, or its default when absent or invalid.
func (p *Params) Bool(name string) bool {
	d := p.decl(name, KindBool)
	def, _ := d.Default.(bool)
	n, ok := p.scalar(name, "a boolean")
	if !ok {
		return def
	}
	var b bool
	if n.Tag != "!!bool" || n.Decode(&b) != nil {
		p.Errorf(name, "%q must be true or false, got %q", name, n.Value)
		return def
	}
	return b
}

// Duration returns positive duration param name ("250ms", "2s"), or its default when
// absent or invalid.
func (p *Params) Duration(name string) time.Duration {
	d := p.decl(name, KindDuration)
	def, _ := d.Default.(time.Duration)
	n, ok := p.scalar(name, "a duration")
	if !ok {
		return def
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v <= 0 {
		p.Errorf(name, "%q must be a positive duration like 250ms or 2s, got %q", name, n.Value)
		return def
	}
	return v
}

// Enum returns param name, one of the declared values, or its default when absent or
// invalid.
func (p *Params) Enum(name string) string {
	d := p.decl(name, KindEnum)
	def, _ := d.Default.(string)
	n, ok := p.scalar(name, "a string")
	if !ok {
		return def
	}
	if !slices.Contains(d.Type.Values, n.Value) {
		p.Errorf(name, "%q must be one of %s, got %q", name, strings.Join(d.Type.Values, ", "), n.Value)
		return def
	}
	return n.Value
}

// Strings returns list param name: non-empty strings, or for an enum list declared
// values. It is nil when absent or invalid.
func (p *Params) Strings(name string) []string {
	d := p.decl(name, KindStringList, KindEnumList)
	n, ok := p.values[name]
	if !ok {
		return nil
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.Errorf(name, "%q must be a non-empty list of strings", name)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		field := p.field + "." + name + "[" + strconv.Itoa(i) + "]"
		switch {
		case item.Kind != yaml.ScalarNode || item.Tag == "!!null" || item.Value == "":
			p.ctx.add(p.ctx.Source.Errorf(diag.KindInvalidParams, item, field, "%q must be a list of non-empty strings", name))
			return nil
		case d.Type.Kind == KindEnumList && !slices.Contains(d.Type.Values, item.Value):
			p.ctx.add(p.ctx.Source.Errorf(diag.KindInvalidParams, item, field, "unknown %s %q (known: %s)", name, item.Value, strings.Join(d.Type.Values, ", ")))
			return nil
		}
		out = append(out, item.Value)
	}
	return out
}

// StringMap returns mapping-of-strings param name; nil when absent or invalid.
func (p *Params) StringMap(name string) map[string]string {
	p.decl(name, KindStringMap)
	n, ok := p.values[name]
	if !ok {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.Errorf(name, "%q must be a mapping of strings", name)
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			p.ctx.add(p.ctx.Source.Errorf(diag.KindInvalidParams, v, p.field+"."+name+"."+k.Value, "%q must be a mapping of strings", name))
			return nil
		}
		out[k.Value] = v.Value
	}
	return out
}
