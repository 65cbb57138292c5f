package config

import (
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
)

// settings are the directory-wide knobs; each may be set by at most one file.
type settings struct {
	celCostLimit  uint64
	regoTimeout   time.Duration
	hookTimeout   time.Duration
	binding       engine.BindingMode
	maxRequestAge time.Duration
	approvalTTL   time.Duration
	planLimits    engine.PlanLimits
	// allowBoundaryRemoval lets a reload drop the required hook, guard rules or
	// binding strength the live generation has.
	allowBoundaryRemoval bool
	// allowAuditRequired lets the required hook run in warn or audit mode.
	allowAuditRequired bool
}

func (l *loader) readSettings() {
	setBy := map[string]document{}
	for _, d := range l.docs {
		s := get(d.root, "settings")
		if s == nil || !d.usable("settings") {
			continue
		}
		for i := 0; i+1 < len(s.Content); i += 2 {
			k, v := s.Content[i], s.Content[i+1]
			if first, dup := setBy[k.Value]; dup {
				l.errs = append(l.errs, d.src.Errorf(diag.KindInvalidValue, k, "settings."+k.Value, "setting %q is already set in %s", k.Value, first.src.Name))
				continue
			}
			setBy[k.Value] = d
			l.applySetting(d, k.Value, v)
		}
	}
}

func (l *loader) applySetting(d document, key string, v *yaml.Node) {
	bad := func(format string, args ...any) {
		l.errs = append(l.errs, d.src.Errorf(diag.KindInvalidValue, v, "settings."+key, format, args...))
	}
	switch key {
	case "cel_cost_limit":
		n, err := strconv.ParseUint(v.Value, 0, 64) // base 0: YAML also writes integers as 0x2710 or 10_000
		if err != nil || n == 0 {
			bad("cel_cost_limit must be a positive integer, got %q", v.Value)
			return
		}
		l.settings.celCostLimit = n
	case "rego_timeout", "hook_timeout", "max_request_age", "approval_ttl":
		d, err := time.ParseDuration(v.Value)
		if err != nil || d <= 0 {
			bad("%s must be a positive duration like 50ms, got %q", key, v.Value)
			return
		}
		switch key {
		case "rego_timeout":
			l.settings.regoTimeout = d
		case "hook_timeout":
			l.settings.hookTimeout = d
		case "approval_ttl":
			l.settings.approvalTTL = d
		default:
			l.settings.maxRequestAge = d
		}
	case "max_plan_steps", "max_plan_dependencies", "max_plan_references":
		n, err := strconv.ParseInt(v.Value, 0, 32)
		if err != nil || n <= 0 {
			bad("%s must be a positive integer, got %q", key, v.Value)
			return
		}
		switch key {
		case "max_plan_steps":
			l.settings.planLimits.MaxSteps = int(n)
		case "max_plan_dependencies":
			l.settings.planLimits.MaxDependencies = int(n)
		default:
			l.settings.planLimits.MaxReferences = int(n)
		}
	case "allow_boundary_removal", "allow_audit_required":
		var b bool
		if v.Tag != "!!bool" || v.Decode(&b) != nil {
			bad("%s must be true or false, got %q", key, v.Value)
			return
		}
		if key == "allow_boundary_removal" {
			l.settings.allowBoundaryRemoval = b
		} else {
			l.settings.allowAuditRequired = b
		}
	case "plan_binding":
		switch mode := engine.BindingMode(v.Value); mode {
		case engine.BindingStrict, engine.BindingIdentity, engine.BindingOff:
			l.settings.binding = mode
		default:
			bad("plan_binding must be strict, identity or off, got %q", v.Value)
		}
	}
}
