package config

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/expr"
)

// hookSite locates a compiled hook for error messages about later hooks.
type hookSite struct {
	name string
	file string
	line int
}

func (s hookSite) String() string { return fmt.Sprintf("%q (%s:%d)", s.name, s.file, s.line) }

// compileHooks compiles every hook of every document in registration order and
// checks the rules that span hooks: unique names, one required after_planning hook,
// and no after_planning hook after it.
func (l *loader) compileHooks() ([]engine.Hook, []HookInfo) {
	var hooks []engine.Hook
	var infos []HookInfo
	seen := map[string]hookSite{}
	var required *hookSite
	for _, d := range l.docs {
		if !d.usable("") {
			continue
		}
		for i, n := range contentOf(get(d.root, "hooks")) {
			field := "hooks[" + strconv.Itoa(i) + "]"
			if !d.usable("hooks/" + strconv.Itoa(i)) {
				continue
			}
			name, stage := get(n, "name"), engine.Stage(get(n, "stage").Value)
			site := hookSite{name: name.Value, file: d.src.Name, line: n.Line}
			if first, dup := seen[name.Value]; dup {
				l.errs = append(l.errs, d.src.Errorf(diag.KindDuplicateHook, name, field+".name", "hook name %q is already used by the hook at %s:%d", name.Value, first.file, first.line))
			}
			seen[name.Value] = site
			isRequired := l.checkRequired(d, n, field, stage, site, &required)
			h, info := l.compileHook(d, n, field, stage, isRequired)
			if h == nil {
				continue
			}
			hooks = append(hooks, adapt(h, stage, isRequired))
			infos = append(infos, info)
		}
	}
	return hooks, infos
}

// checkRequired applies the required-hook rules to hook n and reports whether it is
// the required hook.
func (l *loader) checkRequired(d document, n *yaml.Node, field string, stage engine.Stage, site hookSite, required **hookSite) bool {
	req := get(n, "required")
	isRequired := false
	if req != nil {
		_ = req.Decode(&isRequired) // the schema checked it is a boolean: true, True or TRUE
	}
	fail := func(at *yaml.Node, format string, args ...any) {
		l.errs = append(l.errs, d.src.Errorf(diag.KindRequiredHook, at, field, format, args...))
	}
	switch {
	case isRequired && stage != engine.StageAfterPlanning:
		fail(req, "only an after_planning hook can be required (this hook's stage is %s)", stage)
		return false
	case isRequired && get(n, "when") != nil:
		fail(get(n, "when"), "a required hook cannot have `when`: it must review every plan (put conditions in the policy)")
	case isRequired && *required != nil:
		fail(req, "only one hook can be required; %s is required already", *required)
		return false
	case stage == engine.StageAfterPlanning && *required != nil:
		fail(get(n, "stage"), "after_planning hook %q follows the required hook %s; the required hook must be the last after_planning hook", site.name, *required)
	}
	if isRequired {
		*required = &site
	}
	return isRequired
}

func (l *loader) compileHook(d document, n *yaml.Node, field string, stage engine.Stage, required bool) (*hook, HookInfo) {
	name := get(n, "name").Value
	c := l.context(d, stage, name)
	before := len(l.errs)
	h := &hook{name: name, timeout: l.settings.hookTimeout, readsPlanOnly: true}
	info := HookInfo{Name: name, Stage: stage, Required: required, File: d.src.Name, Line: n.Line}
	if w := get(n, "when"); w != nil {
		h.when = c.Expr(w, field+".when", expr.Scope(stage), expr.Bool)
		info.When = w.Value
	}
	if h.mode = ruleMode(get(n, "mode")); !h.mode.Enforcing() {
		info.Mode = h.mode
		if required && !l.settings.allowAuditRequired {
			l.errs = append(l.errs, d.src.Errorf(diag.KindRequiredHook, get(n, "mode"), field+".mode",
				"the required hook may run in %s mode only when settings.allow_audit_required is true: in %s mode it never rejects a plan", h.mode, h.mode))
		}
	}
	if t := get(n, "timeout"); t != nil {
		dur, err := time.ParseDuration(t.Value)
		if err != nil || dur <= 0 {
			l.errs = append(l.errs, d.src.Errorf(diag.KindInvalidValue, t, field+".timeout", "timeout must be a positive duration like 250ms, got %q", t.Value))
		}
		h.timeout = dur
	}
	for j, step := range get(n, "steps").Content {
		action := builtin.CompileStep(c, step, field+".steps["+strconv.Itoa(j)+"]")
		h.steps = append(h.steps, action)
		if desc, ok := action.(builtin.Describer); ok {
			info.Notes = append(info.Notes, desc.Describe())
		}
		if len(step.Content) > 1 && step.Content[0].Value == "rego" && ruleMode(get(step.Content[1], "mode")).Enforcing() {
			info.EnforcingRego = append(info.EnforcingRego, scalar(get(step.Content[1], "query")))
		}
		if len(step.Content) > 1 && step.Content[0].Value == "enrich" {
			if key := scalar(get(step.Content[1], "key")); !engine.RenderedKey(key) {
				info.UnrenderedKeys = append(info.UnrenderedKeys, key)
			}
		}
		if len(step.Content) > 0 {
			info.Steps = append(info.Steps, step.Content[0].Value)
			if spec, ok := builtin.Lookup(step.Content[0].Value); ok && spec.MutatesPlan {
				h.readsPlanOnly = false
			}
		}
	}
	if len(l.errs) > before {
		return nil, info
	}
	return h, info
}

// compileCatalog merges the catalog entries of every document and then the agents
// the gateways declare (extra).
func (l *loader) compileCatalog(extra []catalogSite) *engine.Catalog {
	var sites []catalogSite
	for _, d := range l.docs {
		for _, n := range d.list("catalog") {
			var a engine.CatalogAgent
			if err := n.Decode(&a); err != nil {
				l.errs = append(l.errs, d.src.Errorf(diag.KindCatalog, n, "catalog", "%v", err))
				continue
			}
			sites = append(sites, catalogSite{agent: a, d: d, n: n})
		}
	}
	sites = append(sites, extra...)
	if len(sites) == 0 {
		return nil
	}
	agents := make([]engine.CatalogAgent, len(sites))
	for i, s := range sites {
		agents[i] = s.agent
	}
	c, err := engine.NewCatalog(agents)
	var ce *engine.CatalogError
	switch {
	case errors.As(err, &ce) && ce.Index >= 0 && ce.Index < len(sites):
		s := sites[ce.Index]
		l.errs = append(l.errs, s.d.src.Errorf(diag.KindCatalog, catalogNode(s.n, ce), "catalog", "%s", ce.Error()))
	case err != nil:
		l.errs = append(l.errs, &diag.Error{Kind: diag.KindCatalog, Message: err.Error()})
	}
	return c
}

// catalogNode returns the node of catalog entry n (or of a gateway server, whose agent
// is its name and whose capabilities are its tools) that ce is about: the agent of a
// duplicate agent, the second of two equal capability names or return fields, else n.
func catalogNode(n *yaml.Node, ce *engine.CatalogError) *yaml.Node {
	agent, caps := get(n, "agent"), get(n, "capabilities")
	if agent == nil {
		agent, caps = get(n, "name"), get(n, "tools")
	}
	second := func(list *yaml.Node, value func(*yaml.Node) *yaml.Node) *yaml.Node {
		seen := false
		for _, item := range contentOf(list) {
			if v := value(item); v != nil && v.Value == ce.Name {
				if seen {
					return v
				}
				seen = true
			}
		}
		return nil
	}
	var at *yaml.Node
	switch ce.Reason {
	case engine.CatalogDuplicateAgent:
		at = agent
	case engine.CatalogDuplicateCapability:
		at = second(caps, func(c *yaml.Node) *yaml.Node { return get(c, "name") })
	case engine.CatalogDuplicateReturnField:
		for _, c := range contentOf(caps) {
			if at = second(get(c, "returns"), func(r *yaml.Node) *yaml.Node { return r }); at != nil {
				break
			}
		}
	}
	if at == nil {
		return n
	}
	return at
}
