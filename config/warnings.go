package config

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/policy"
)

// Warning is something in a config directory that compiles but lets every plan through
// or silently does nothing: `agentd check` prints them, and `agentd check --strict`
// fails on them.
type Warning = policy.Warning

// Warning kinds of the directory itself; the policy kinds are policy.Warn*.
const (
	// WarnNoRequiredHook: no required after_planning hook, so every plan that passes
	// plan validation runs.
	WarnNoRequiredHook = "no_required_hook"
	// WarnOptionalEnforce: an optional after_planning hook enforces a rego step, whose
	// denials can only fail open (a hook_error; the plan goes on).
	WarnOptionalEnforce = "optional_enforce"
	// WarnUnrenderedKey: an enrich step sets a key no prompt renders (not a tag name),
	// so the model never sees it through the gateway.
	WarnUnrenderedKey = "unrendered_key"
	// WarnUnknownFolder: a top-level folder agentd does not read whose name is close to
	// one it does (hook/ for hooks/).
	WarnUnknownFolder = "unknown_folder"
)

// Folders are the top-level folders of a config directory agentd reads (requests/
// holds example API bodies that `agentd probe` uses; schemas/ the JSON Schemas that
// `agentd schema` writes for editors).
var Folders = []string{hooksDir, policiesDir, dataDir, testsDir, "requests", "schemas"}

// Warnings lists, for gen compiled from gen.Dir: a missing required after_planning
// hook, top-level folders that look like misspelled known ones, and the policy
// warnings of the Rego the generation queries (policy.Bundle.Lint) and of OPA's strict
// mode (policy.Strict). It re-reads the directory's policies for the strict compile.
func Warnings(gen *Generation) []Warning {
	var out []Warning
	if _, ok := gen.Pipeline.RequiredHook(); !ok {
		out = append(out, Warning{Kind: WarnNoRequiredHook, Message: "no after_planning hook is `required: true`: " +
			"every plan that passes plan validation runs; add a required hook with a rego step (see policies/agentd/plan)"})
	}
	out = append(out, optionalEnforce(gen.Hooks)...)
	out = append(out, unrenderedKeys(gen.Hooks)...)
	out = append(out, unknownFolders(gen.Dir)...)
	if gen.Policies != nil {
		out = append(out, gen.Policies.Lint(gen.Queries)...)
		cf, _ := readConfig(gen.Dir)
		modules := make([]policy.Module, len(cf.policies))
		for i, f := range cf.policies {
			modules[i] = policy.Module{File: f.name, Source: f.data}
		}
		out = append(out, policy.Strict(modules)...)
	}
	return out
}

// optionalEnforce warns about every optional after_planning hook in enforce mode with a
// rego step in enforce mode: a denial of an optional hook is a hook error that lets the
// plan through, so "enforce" there rejects nothing.
func optionalEnforce(hooks []HookInfo) []Warning {
	var out []Warning
	for _, h := range hooks {
		if h.Stage != engine.StageAfterPlanning || h.Required || !h.Mode.Enforcing() || len(h.EnforcingRego) == 0 {
			continue
		}
		out = append(out, Warning{Kind: WarnOptionalEnforce, File: h.File, Line: h.Line, Message: fmt.Sprintf(
			"hook %q is optional, so its rego step (%s) in mode: enforce rejects nothing: a denial fails open as hook_error and the plan runs; "+
				"to enforce the rule, move the step into the required hook (mode: audit, then warn, then enforce), or set mode: audit to only record it",
			h.Name, strings.Join(h.EnforcingRego, ", "))})
	}
	return out
}

// unrenderedKeys warns about every enrichment key an enrich step sets that
// engine.RenderEnrichments leaves out.
func unrenderedKeys(hooks []HookInfo) []Warning {
	var out []Warning
	for _, h := range hooks {
		for _, k := range h.UnrenderedKeys {
			out = append(out, Warning{Kind: WarnUnrenderedKey, File: h.File, Line: h.Line, Message: fmt.Sprintf(
				"hook %q sets enrichment %q, which is no tag name, so no prompt renders it and the model never sees it through the gateway; "+
					"name it with letters, digits, _, - or . (starting with a letter or _)", h.Name, k)})
		}
	}
	return out
}

// unknownFolders warns about top-level folders whose names are close to a folder
// agentd reads; other folders (an agent's sources, a knowledge base) are left alone.
func unknownFolders(dir string) []Warning {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Warning
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || slices.Contains(Folders, name) {
			continue
		}
		if info, err := os.Stat(dir + string(os.PathSeparator) + name); err != nil || !info.IsDir() {
			continue
		}
		if s := diag.Suggest(name, Folders); s != "" {
			out = append(out, Warning{Kind: WarnUnknownFolder, File: name + "/", Message: fmt.Sprintf(
				"agentd does not read %s/: did you mean %s/? (it reads %s)", name, s, strings.Join(Folders, "/, ")+"/")})
		}
	}
	return out
}
