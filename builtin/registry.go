package builtin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentd-dev/agentd/engine"
)

// Spec describes one built-in action: its name, the stages it may appear in (nil means
// every stage), its params and how to compile them.
type Spec struct {
	Name    string
	Summary string
	Stages  []engine.Stage
	Params  []Param
	// MutatesPlan is set for actions that change State.Plan in place; a hook without
	// any is an engine.PlanReader and skips the engine's defensive plan copy.
	MutatesPlan bool
	// KeepsResponse is set for actions that never change State.Response; a response
	// only such actions see in after_synthesis can be streamed as it arrives.
	KeepsResponse bool
	// Compile turns validated params into an Action. It reports problems through p
	// and may return nil when it did.
	Compile func(p *Params) Action
}

// Param documents one param of an action. Type is "CEL <type>" for expressions.
type Param struct {
	Name     string
	Type     string
	Required bool
	Doc      string
}

// AllowedIn reports whether the action may appear in stage.
func (s *Spec) AllowedIn(stage engine.Stage) bool {
	return s.Stages == nil || slices.Contains(s.Stages, stage)
}

func (s *Spec) param(name string) (Param, bool) {
	for _, p := range s.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

var registry = map[string]*Spec{}

func register(s *Spec) {
	if _, dup := registry[s.Name]; dup {
		panic("builtin: duplicate action " + s.Name)
	}
	registry[s.Name] = s
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

// Table renders the action reference as a Markdown table, one row per action.
func Table() string {
	var b strings.Builder
	b.WriteString("| action | stages | params | what it does |\n| --- | --- | --- | --- |\n")
	for _, name := range Names() {
		s := registry[name]
		stages := "any"
		if s.Stages != nil {
			parts := make([]string, len(s.Stages))
			for i, st := range s.Stages {
				parts[i] = "`" + string(st) + "`"
			}
			stages = strings.Join(parts, ", ")
		}
		params := make([]string, len(s.Params))
		for i, p := range s.Params {
			req := ""
			if p.Required {
				req = ", required"
			}
			params[i] = fmt.Sprintf("`%s` (%s%s): %s", p.Name, p.Type, req, p.Doc)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, stages, strings.Join(params, "<br>"), s.Summary)
	}
	return b.String()
}
