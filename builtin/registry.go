package builtin

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/expr"
)

// Spec describes one built-in action: its name, the stages it may appear in (nil means
// every stage), its params and how to compile them.
type Spec struct {
	Name    string
	Summary string
	Stages  []engine.Stage
	Params  []Param
	// RequireAny names params of which at least one must be given.
	RequireAny []string
	// MutatesPlan is set for actions that change State.Plan in place; a hook without
	// any is an engine.PlanReader and skips the engine's defensive plan copy.
	MutatesPlan bool
	// KeepsResponse is set for actions that never change State.Response; a response
	// only such actions see in after_synthesis can be streamed as it arrives.
	KeepsResponse bool
	// Compile turns validated params into an Action. It reads them through p, which
	// applies the declared types and defaults, and may return nil after reporting a
	// problem through p.
	Compile func(p *Params) Action
}

// Param declares one param of an action, once: the loader checks it, Compile reads it
// through Params, and the HookSet schema's $defs and the README's action table are
// generated from it (go generate ./builtin).
type Param struct {
	Name     string
	Type     Type
	Required bool
	// Default is what Params returns when the param is absent: a string (String and
	// Enum), an int (Int), a bool (Bool) or a time.Duration (Duration). It is nil for a
	// required param and for one whose absence Doc explains instead.
	Default any
	Doc     string
}

// Kind is the shape of a param's value.
type Kind string

// Param kinds.
const (
	KindString     Kind = "string"      // a string; a required one is not empty
	KindInt        Kind = "integer"     // an integer of at least Type.Min
	KindBool       Kind = "boolean"     // true or false
	KindDuration   Kind = "duration"    // a positive Go duration such as 250ms or 2s
	KindEnum       Kind = "enum"        // one of Type.Values
	KindEnumList   Kind = "enum_list"   // a non-empty list of Type.Values
	KindStringList Kind = "string_list" // a non-empty list of non-empty strings
	KindStringMap  Kind = "string_map"  // a mapping of names to strings
	KindCEL        Kind = "cel"         // a CEL expression of result Type.Result
	KindCELMap     Kind = "cel_map"     // a mapping of names to CEL expressions of Type.Result
)

var kinds = []Kind{KindString, KindInt, KindBool, KindDuration, KindEnum, KindEnumList, KindStringList, KindStringMap, KindCEL, KindCELMap}

// Type is the type of a param: its kind and what the kind needs.
type Type struct {
	Kind Kind
	// Min is the least value of an integer.
	Min int
	// Values are the allowed values of an enum or an enum list, in documentation order.
	Values []string
	// Result is the output type of a CEL expression, and Scope the variables it sees;
	// an empty Scope is the scope of the hook's stage.
	Result expr.Kind
	Scope  expr.Scope
}

// The constructors of the param types the actions use.
func text() Type                                { return Type{Kind: KindString} }
func integer(min int) Type                      { return Type{Kind: KindInt, Min: min} }
func boolean() Type                             { return Type{Kind: KindBool} }
func duration() Type                            { return Type{Kind: KindDuration} }
func enum(values ...string) Type                { return Type{Kind: KindEnum, Values: values} }
func enumList(values ...string) Type            { return Type{Kind: KindEnumList, Values: values} }
func textList() Type                            { return Type{Kind: KindStringList} }
func textMap() Type                             { return Type{Kind: KindStringMap} }
func celExpr(result expr.Kind) Type             { return Type{Kind: KindCEL, Result: result} }
func celIn(s expr.Scope, result expr.Kind) Type { return Type{Kind: KindCEL, Result: result, Scope: s} }
func celMap(result expr.Kind) Type              { return Type{Kind: KindCELMap, Result: result} }

// AllowedIn reports whether the action may appear in stage.
func (s *Spec) AllowedIn(stage engine.Stage) bool {
	return s.Stages == nil || slices.Contains(s.Stages, stage)
}

func (s *Spec) param(name string) (Param, bool) {
	i := slices.IndexFunc(s.Params, func(p Param) bool { return p.Name == name })
	if i < 0 {
		return Param{}, false
	}
	return s.Params[i], true
}

// paramNames lists the names of s's params in declaration order.
func (s *Spec) paramNames() []string {
	names := make([]string, len(s.Params))
	for i, p := range s.Params {
		names[i] = p.Name
	}
	return names
}

var registry = map[string]*Spec{}

// register adds s to the registry. A declaration that contradicts itself is a
// programming error and panics at init (see check).
func register(s *Spec) {
	if _, dup := registry[s.Name]; dup {
		panic("builtin: duplicate action " + s.Name)
	}
	if err := s.check(); err != nil {
		panic(fmt.Sprintf("builtin: action %s: %v", s.Name, err))
	}
	registry[s.Name] = s
}

// check reports a duplicate param, a param without doc, a default of the wrong type or
// outside its enum or minimum, a required param with a default, and a RequireAny name
// that is not a param.
func (s *Spec) check() error {
	for i, p := range s.Params {
		if err := p.check(); err != nil {
			return fmt.Errorf("param %s: %w", p.Name, err)
		}
		if slices.ContainsFunc(s.Params[:i], func(q Param) bool { return q.Name == p.Name }) {
			return fmt.Errorf("duplicate param %s", p.Name)
		}
	}
	for _, name := range s.RequireAny {
		if _, ok := s.param(name); !ok {
			return fmt.Errorf("RequireAny names unknown param %s", name)
		}
	}
	return nil
}

func (p Param) check() error {
	switch {
	case p.Doc == "":
		return errors.New("no doc")
	case !slices.Contains(kinds, p.Type.Kind):
		return fmt.Errorf("unknown kind %q", p.Type.Kind)
	case (p.Type.Kind == KindEnum || p.Type.Kind == KindEnumList) && len(p.Type.Values) == 0:
		return errors.New("an enum without values")
	}
	if p.Default == nil {
		return nil
	}
	if p.Required {
		return errors.New("required with a default")
	}
	ok := false
	switch d := p.Default.(type) {
	case string:
		ok = p.Type.Kind == KindString || p.Type.Kind == KindEnum && slices.Contains(p.Type.Values, d)
	case int:
		ok = p.Type.Kind == KindInt && d >= p.Type.Min
	case bool:
		ok = p.Type.Kind == KindBool
	case time.Duration:
		ok = p.Type.Kind == KindDuration && d > 0
	}
	if !ok {
		return fmt.Errorf("default %#v is not a valid %s", p.Default, p.Type.Kind)
	}
	return nil
}

// Lookup returns the action named name.
func Lookup(name string) (*Spec, bool) {
	s, ok := registry[name]
	return s, ok
}

// Names returns every action name, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
