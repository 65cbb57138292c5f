package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Warning kinds reported by Lint and Strict: what compiles but may let every plan
// through or silently do nothing. They are stable.
const (
	// WarnUnprovidedData: a data reference that no data document and no rule provides;
	// it is always undefined.
	WarnUnprovidedData = "unprovided_data"
	// WarnDataMountedOff: a lookup by key into data whose only member is named like the
	// data's own path (a data file one folder too deep), so it finds nothing.
	WarnDataMountedOff = "data_mounted_off"
	// WarnNoDeny: a query names a package without a deny rule; its decision has no
	// deny, which rejects every plan at run time.
	WarnNoDeny = "no_deny"
	// WarnUndefinedRead: a deny rule reads a member a plan or request may lack (step
	// metadata, request metadata or enrichments) outside a negation: when it is absent
	// the rule is undefined and denies nothing.
	WarnUndefinedRead = "undefined_read"
	// WarnStrict: OPA's strict mode rejects the module (unused variables or imports,
	// deprecated built-ins, shadowed input or data).
	WarnStrict = "rego_strict"
)

// Warning is one finding of Lint or Strict, at a file and line (zero when unknown).
type Warning struct {
	Kind    string
	File    string
	Line    int
	Message string
}

func (w Warning) String() string {
	at := w.File
	if w.Line > 0 {
		at = fmt.Sprintf("%s:%d", w.File, w.Line)
	}
	if at != "" {
		at += ": "
	}
	return at + w.Kind + ": " + w.Message
}

// Lint reports, for the rules the given queries reach, data references nothing
// provides, queries naming a package without a deny rule, and deny rules that read a
// member a plan or request may lack (see the Warn kinds). Queries that do not parse or
// name nothing are skipped (Prepare reports them). Warnings are sorted by file and line.
func (b *Bundle) Lint(queries []string) []Warning {
	var out []Warning
	var roots []*ast.Rule
	for _, query := range queries {
		ref, err := ast.ParseRef(query)
		if err != nil || !b.provided(ref) {
			continue
		}
		deny := ref
		if b.isPackage(ref) {
			deny = ref.Append(ast.InternedTerm("deny"))
			if len(b.compiler.GetRulesExact(deny)) == 0 {
				out = append(out, Warning{Kind: WarnNoDeny, Message: fmt.Sprintf(
					"query %s names a package without a deny rule: its decision has no deny, so every plan is rejected at run time", ref)})
			}
		}
		denies := b.compiler.GetRulesExact(deny)
		guarded := b.guardedMembers(denies)
		for _, r := range denies {
			out = append(out, undefinedReads(r, guarded)...)
		}
		roots = append(roots, b.compiler.GetRulesForVirtualDocument(ref)...)
		roots = append(roots, b.compiler.GetRulesWithPrefix(ref)...)
	}
	out = append(out, b.unprovided(roots)...)
	return sortWarnings(out)
}

// unprovided reports the data references of roots and of every rule they depend on that
// no rule and no data document provides.
func (b *Bundle) unprovided(roots []*ast.Rule) []Warning {
	var out []Warning
	seen := map[*ast.Rule]bool{}
	reported := map[string]bool{}
	for _, root := range roots {
		for _, r := range dependencies(b.compiler, root) {
			if seen[r] {
				continue
			}
			seen[r] = true
			ast.WalkRefs(r, func(ref ast.Ref) bool {
				prefix := ref.GroundPrefix()
				if !prefix.HasPrefix(ast.DefaultRootRef) || len(prefix) < 2 {
					return false
				}
				var w Warning
				switch {
				case !b.provided(prefix):
					w = Warning{Kind: WarnUnprovidedData, Message: fmt.Sprintf("%s: no data document and no rule provides it, so it is always undefined", prefix)}
				case len(ref) > len(prefix):
					msg := b.mountedOff(prefix)
					if msg == "" {
						return false
					}
					w = Warning{Kind: WarnDataMountedOff, Message: msg}
				default:
					return false
				}
				if loc := ref[0].Location; loc != nil {
					w.File, w.Line = loc.File, loc.Row
				}
				if key := w.String(); !reported[key] {
					reported[key] = true
					out = append(out, w)
				}
				return false
			})
		}
	}
	return out
}

// mountedOff says why a reference that looks up a member of prefix by a key that is not
// a constant (data.travel.tenants[t]) reads data mounted one level off, "" when it does
// not: the data at prefix is an object whose only member is named like prefix's last
// part, the mark of a file one folder too deep (data/travel/tenants/tenants.json holding
// {"tenants": …}).
func (b *Bundle) mountedOff(prefix ast.Ref) string {
	path, ok := stringPath(prefix)
	if !ok || len(path) == 0 || b.compiler.RuleTree.Find(prefix) != nil {
		return ""
	}
	n := dataAt(b.data, path)
	last := path[len(path)-1]
	if n == nil || len(n.children) != 1 || n.children[last] == nil {
		return ""
	}
	return fmt.Sprintf("%s[…] looks up the members of %s, whose only member is %q (from %s): the data is mounted one level off, "+
		"so the lookup finds nothing; move the file up a folder, or read %s.%s[…]", prefix, prefix, last, quoteFile(n.children[last].file), prefix, last)
}

// provided reports whether something can exist at ref: a package or rule of the rule
// tree at it, a rule above it, or data at or above it.
func (b *Bundle) provided(ref ast.Ref) bool {
	path, ok := stringPath(ref)
	return ok && b.defined(ref, path)
}

// undefinedReads reports the deny rule r when it reads, outside a negation, a member
// inside metadata (of a step or of the request) or enrichments that no deny rule of
// the set guards (see guardedMembers): a plan or request may lack it, and r then
// denies nothing.
func undefinedReads(r *ast.Rule, guarded map[string]bool) []Warning {
	var reads, lines []string
	for _, e := range r.Body {
		if e.Negated || e.Location == nil {
			continue
		}
		ast.WalkRefs(e, func(ref ast.Ref) bool {
			if m := optionalMember(ref); m != "" && !guarded[m] {
				if text := string(e.Location.Text); !slices.Contains(reads, text) {
					reads = append(reads, text)
				}
				if line := fmt.Sprint(e.Location.Row); !slices.Contains(lines, line) {
					lines = append(lines, line)
				}
			}
			return false
		})
	}
	if len(reads) == 0 {
		return nil
	}
	return []Warning{{Kind: WarnUndefinedRead, File: r.Location.File, Line: r.Location.Row, Message: fmt.Sprintf(
		"this deny rule reads a member a plan or request may lack outside a negation (line %s: `%s`): when it is absent the rule is undefined "+
			"and denies nothing; read it through a function with a default (agentd.lib.str_field, agentd.lib.step_capability, agentd.lib.param) "+
			"or add a deny rule for its absence, `not f(step)` with a function f that reads it",
		strings.Join(lines, ", "), strings.Join(reads, "`, `"))}}
}

// guardedMembers are the optional members (see optionalMember) that a deny rule of the
// set checks for absence: read by a function it calls under `not` (`not
// lib.step_capability(step)`), which is true when the member is missing.
func (b *Bundle) guardedMembers(denies []*ast.Rule) map[string]bool {
	out := map[string]bool{}
	for _, r := range denies {
		for _, e := range r.Body {
			if !e.Negated || !e.IsCall() {
				continue
			}
			for _, f := range b.compiler.GetRulesExact(e.Operator()) {
				for _, dep := range dependencies(b.compiler, f) {
					ast.WalkRefs(dep.Body, func(ref ast.Ref) bool {
						if m := optionalMember(ref); m != "" {
							out[m] = true
						}
						return false
					})
				}
			}
		}
	}
	return out
}

// optionalMember returns, for ref rooted at input or at a local variable, the part of
// it from a metadata or enrichments member on ("metadata.capability"), when it reads
// inside one; "" otherwise.
func optionalMember(ref ast.Ref) string {
	if ref.HasPrefix(ast.DefaultRootRef) {
		return ""
	}
	for i := 1; i < len(ref)-1; i++ {
		if s, ok := ref[i].Value.(ast.String); ok && (s == "metadata" || s == "enrichments") {
			parts := make([]string, 0, len(ref)-i)
			for _, t := range ref[i:] {
				if s, ok := t.Value.(ast.String); ok {
					parts = append(parts, string(s))
				} else {
					parts = append(parts, t.String())
				}
			}
			return strings.Join(parts, ".")
		}
	}
	return ""
}

// Strict compiles the modules as the bundle does but in OPA's strict mode, and reports
// what strict mode rejects as warnings. Modules that do not parse or compile are left
// to Compile.
func Strict(modules []Module) []Warning {
	parsed, errs := parseModules(modules)
	if len(errs) > 0 {
		return nil
	}
	byFile := make(map[string]*ast.Module, len(parsed))
	for i, m := range parsed {
		byFile[modules[i].File] = m
	}
	c := ast.NewCompiler().
		SetErrorLimit(0).
		WithCapabilities(capabilities()).
		WithDefaultRegoVersion(ast.RegoV1).
		WithStrict(true)
	c.Compile(byFile)
	var out []Warning
	for _, e := range c.Errors {
		w := Warning{Kind: WarnStrict, Message: e.Message}
		if e.Location != nil {
			w.File, w.Line = e.Location.File, e.Location.Row
		}
		out = append(out, w)
	}
	return sortWarnings(out)
}

func sortWarnings(ws []Warning) []Warning {
	slices.SortFunc(ws, func(a, b Warning) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Kind, b.Kind), strings.Compare(a.Message, b.Message))
	})
	return slices.Compact(ws)
}
