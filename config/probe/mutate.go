package probe

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
)

// Mutation is one way of rewriting a seed plan.
type Mutation struct {
	Name string `json:"name"`
	// Doc says what the mutation does.
	Doc string `json:"doc"`
	// Catch says what kind of deny rule would reject such a plan; a finding names it
	// when the trace shows no deny rule stopping on the offending step.
	Catch string `json:"catch"`
	apply func(g *generator, b *base) []Case
}

// base is a reviewed seed that mutations start from.
type base struct {
	Case
	// accepted: the stage accepted the seed unmutated; otherwise its policy rejected it.
	accepted bool
}

// generator builds the candidates of a run.
type generator struct {
	rng *rand.Rand
	// denied are steps (wire form) whose single-step plan the policy rejects, or whose
	// call the guards deny under the seed's labels.
	denied []map[string]any
}

// metadataMutation is the mutation of the request metadata, judged against what the
// seed's own metadata was allowed (prober.escaped).
const metadataMutation = "request_metadata"

// maxStepsMutated bounds the steps of one seed whose members are mutated one by one.
const maxStepsMutated = 4

// hiddenAmong is how many allowed steps surround a hidden disallowed one.
const hiddenAmong = 8

const catchCapability = "a deny rule for every step whose metadata.capability is not a non-empty string " +
	"(`not lib.step_capability(step)` with policies/agentd/lib), written so it cannot be undefined"

// Mutations lists every mutation, in the order candidates are generated.
func Mutations() []Mutation { return mutations }

var mutations = []Mutation{
	stepMember("capability", "metadata.capability", capabilityVariants, catchCapability),
	stepMember("metadata", "metadata", memberVariants, catchCapability),
	stepMember("parameters", "metadata.parameters", memberVariants,
		"deny rules that read metadata.parameters only through a helper that is defined for every step (lib.param), or that deny a step whose parameters are not an object"),
	stepMember("namespace", "namespace", identityMemberVariants,
		"a deny rule for a namespace that is not in the allow-list, written with lib.str_field so that a missing or non-string namespace is denied too"),
	stepMember("agent_name", "agent_name", identityMemberVariants,
		"a deny rule for an agent that is not in the allow-list, written with lib.str_field so that a missing or non-string agent_name is denied too"),
	{
		Name: "steps", Doc: "the plan's steps missing, null, or of another JSON type",
		Catch: "a plan-level deny rule for input.plan.steps that is missing or not an array",
		apply: func(g *generator, b *base) []Case {
			var out []Case
			for _, v := range memberVariants(nil) {
				c := b.with("steps", v.detail)
				setOrDelete(c.plan(), "steps", v)
				out = append(out, c)
			}
			return out
		},
	},
	{
		Name: metadataMutation, Doc: "the request metadata of a rejected plan missing, or one of its members missing, null, empty, " +
			"another value (an unknown tenant) or of another JSON type; a finding when it gets an identity the unmutated metadata was not allowed",
		Catch: "deny rules that read request metadata through a helper with a default (lib.str_field), or a deny rule for its absence: a read of a missing member is undefined and denies nothing",
		apply: func(_ *generator, b *base) []Case {
			if b.accepted || len(b.Metadata) == 0 {
				return nil
			}
			none := b.with(metadataMutation, "request metadata missing")
			none.Metadata = nil
			out := []Case{none}
			for _, key := range slices.Sorted(maps.Keys(b.Metadata)) {
				for _, v := range identityMemberVariants(nil) {
					c := b.with(metadataMutation, fmt.Sprintf("request metadata.%s %s", key, v.detail))
					setOrDelete(c.Metadata, key, v)
					out = append(out, c)
				}
			}
			return out
		},
	},
	{
		Name: "identity_case", Doc: "namespace, agent_name or capability in upper case or with a capital first letter",
		Catch: "an exact comparison against the allow-list (never lower() of the plan's value)",
		apply: identityVariants("identity_case", func(_ *generator, s string) []variant {
			return []variant{{"upper-case", strings.ToUpper(s)}, {"capitalized", capitalize(s)}}
		}),
	},
	{
		Name: "identity_confusable", Doc: "a Latin letter of namespace, agent_name or capability replaced by a Cyrillic homoglyph, or the whole value in fullwidth letters",
		Catch: "an exact comparison against the allow-list",
		apply: identityVariants("identity_confusable", func(g *generator, s string) []variant {
			var out []variant
			if h, ok := homoglyph(g.rng, s); ok {
				out = append(out, variant{"homoglyph", h})
			}
			return append(out, variant{"fullwidth", fullwidth(s)})
		}),
	},
	{
		Name: "identity_whitespace", Doc: "namespace, agent_name or capability with leading, trailing, non-breaking or zero-width space",
		Catch: "an exact comparison against the allow-list (never trim() of the plan's value)",
		apply: identityVariants("identity_whitespace", func(_ *generator, s string) []variant {
			return []variant{{"leading space", " " + s}, {"trailing space", s + " "}, {"trailing tab", s + "\t"},
				{"trailing newline", s + "\n"}, {"non-breaking space", s + "\u00a0"}, {"zero-width space", s + "\u200b"}}
		}),
	},
	{
		Name: "duplicate_step", Doc: "a step repeated under a new step_id",
		Catch: "deny rules that look at every step, not at a count or the first match",
		apply: func(_ *generator, b *base) []Case {
			var out []Case
			for i := range min(len(b.steps()), maxStepsMutated) {
				c := b.with("duplicate_step", fmt.Sprintf("step %d repeated", i+1))
				dup := cloneJSON(c.steps()[i]).(map[string]any)
				dup["step_id"] = "probe-dup"
				appendSteps(c.plan(), dup)
				out = append(out, c)
			}
			return out
		},
	},
	{
		Name: "reorder_steps", Doc: "the steps in reverse order",
		Catch: "deny rules that look at every step, not at the first or last one",
		apply: func(_ *generator, b *base) []Case {
			if len(b.steps()) < 2 {
				return nil
			}
			c := b.with("reorder_steps", "steps reversed")
			steps := c.plan()["steps"].([]any)
			for i, j := 0, len(steps)-1; i < j; i, j = i+1, j-1 {
				steps[i], steps[j] = steps[j], steps[i]
			}
			return []Case{c}
		},
	},
	{
		Name: "hidden_step", Doc: fmt.Sprintf("a step the policy denies on its own hidden among %d allowed ones, last or at a random position", hiddenAmong),
		Catch: "deny rules that iterate over every step (`some step in input.plan.steps`), not over a slice or a count",
		apply: func(g *generator, b *base) []Case {
			allowed := plainSteps(b.steps())
			if !b.accepted || len(allowed) == 0 {
				return nil
			}
			var out []Case
			for _, d := range g.denied {
				for _, at := range []int{hiddenAmong, g.rng.IntN(hiddenAmong)} {
					c := b.with("hidden_step", fmt.Sprintf("%s at position %d of %d", stepIdentity(d), at+1, hiddenAmong+1))
					var steps []any
					for i := range hiddenAmong {
						s := cloneJSON(allowed[i%len(allowed)]).(map[string]any)
						s["step_id"] = fmt.Sprintf("probe-%d", i+1)
						steps = append(steps, s)
					}
					hidden := cloneJSON(d).(map[string]any)
					hidden["step_id"] = "probe-hidden"
					steps = append(steps[:at], append([]any{hidden}, steps[at:]...)...)
					c.plan()["steps"] = steps
					out = append(out, c)
				}
			}
			return out
		},
	},
	{
		Name: "later_phase", Doc: "a step the policy denies on its own, in phase 2 or 3 after the seed's accepted phase",
		Catch: "deny rules that hold in every phase (not only when input.phase == 1 or phase_number is absent)",
		apply: func(g *generator, b *base) []Case {
			prior, err := decodePlan(b.Plan)
			if !b.accepted || err != nil || len(prior.Steps) == 0 {
				return nil
			}
			var out []Case
			for _, d := range g.denied {
				for _, phase := range []int{2, 3} {
					c := b.with("later_phase", fmt.Sprintf("%s in phase %d", stepIdentity(d), phase))
					c.Prior = append(c.Prior, prior.Steps...)
					step := cloneJSON(d).(map[string]any)
					step["step_id"] = fmt.Sprintf("probe-phase-%d", phase)
					plan := c.plan()
					plan["steps"] = []any{step}
					plan["phase_number"] = json.Number(fmt.Sprint(phase))
					out = append(out, c)
				}
			}
			return out
		},
	},
	{
		Name: "empty_nonterminal", Doc: "no steps in a plan that is not terminal, with and without needs_user_input",
		Catch: "plan validation rule 1 (an empty plan must be terminal or ask for user input)",
		apply: func(_ *generator, b *base) []Case {
			c := b.with("empty_nonterminal", "no steps, terminal false")
			c.plan()["steps"], c.plan()["terminal"] = []any{}, false
			ask := b.with("empty_nonterminal", "no steps, terminal false, needs_user_input")
			ask.plan()["steps"], ask.plan()["terminal"] = []any{}, false
			ask.plan()["needs_user_input"] = map[string]any{"question": "approve?"}
			return []Case{c, ask}
		},
	},
	override("override_plan", "members that look like overrides (allow, approved) on the plan",
		func(c *Case) { setAll(c.plan()) }),
	override("override_step", "members that look like overrides (allow, approved) on each step",
		func(c *Case) {
			for _, s := range c.steps() {
				setAll(s)
			}
		}),
	override("override_step_metadata", "allow, approved and override set in each step's metadata and parameters",
		func(c *Case) {
			for _, s := range c.steps() {
				meta, ok := s["metadata"].(map[string]any)
				if !ok {
					continue
				}
				setAll(meta)
				if params, ok := meta["parameters"].(map[string]any); ok {
					setAll(params)
				}
			}
		}),
	override("override_request_metadata", "allow, approved, override, admin and role: admin in the request metadata",
		func(c *Case) {
			if c.Metadata == nil {
				c.Metadata = map[string]any{}
			}
			setAll(c.Metadata)
			c.Metadata["admin"], c.Metadata["role"] = true, "admin"
		}),
}

// variant is one value a mutation puts somewhere; absent means the member is deleted.
type variant struct {
	detail string
	value  any
}

// absent marks a variant that deletes the member.
type absentValue struct{}

var absent any = absentValue{}

func setOrDelete(m map[string]any, key string, v variant) {
	if m == nil {
		return
	}
	if v.value == absent {
		delete(m, key)
		return
	}
	m[key] = v.value
}

// memberVariants are a member missing, null, and of other JSON types.
func memberVariants(any) []variant {
	return []variant{{"missing", absent}, {"null", nil}, {"a string", "probe"}, {"a number", json.Number("7")},
		{"an array", []any{}}, {"an object", map[string]any{}}}
}

// identityMemberVariants are memberVariants and the empty string.
func identityMemberVariants(current any) []variant {
	return append(memberVariants(current), variant{"empty", ""})
}

// capabilityVariants add, to identityMemberVariants, the capability wrapped in an
// array and in an object, and true.
func capabilityVariants(current any) []variant {
	return append(identityMemberVariants(current),
		variant{"true", true}, variant{"in an array", []any{current}}, variant{"in an object", map[string]any{"name": current}})
}

// stepMember mutates one member of each step (path "metadata.capability" is the
// capability inside metadata).
func stepMember(name, path string, variants func(current any) []variant, catch string) Mutation {
	return Mutation{
		Name: name, Doc: fmt.Sprintf("a step's %s missing, null, or of another JSON type", path), Catch: catch,
		apply: func(_ *generator, b *base) []Case {
			var out []Case
			for i := range min(len(b.steps()), maxStepsMutated) {
				for _, v := range variants(memberAt(b.steps()[i], path)) {
					c := b.with(name, fmt.Sprintf("step %d: %s %s", i+1, path, v.detail))
					parent, key := memberParent(c.steps()[i], path)
					if parent == nil {
						continue
					}
					setOrDelete(parent, key, v)
					out = append(out, c)
				}
			}
			return out
		},
	}
}

// memberParent returns the object holding path's last member, and that member's key.
func memberParent(step map[string]any, path string) (map[string]any, string) {
	parts := strings.Split(path, ".")
	m := step
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil, ""
		}
		m = next
	}
	if path == "metadata.parameters" {
		if _, ok := step["metadata"].(map[string]any); !ok {
			return nil, ""
		}
	}
	return m, parts[len(parts)-1]
}

func memberAt(step map[string]any, path string) any {
	parent, key := memberParent(step, path)
	if parent == nil {
		return nil
	}
	return parent[key]
}

// identityVariants rewrites each identity member (namespace, agent_name, capability)
// of each step with the variants f gives for its string value.
func identityVariants(name string, f func(g *generator, s string) []variant) func(*generator, *base) []Case {
	return func(g *generator, b *base) []Case {
		var out []Case
		for i := range min(len(b.steps()), maxStepsMutated) {
			for _, path := range []string{"namespace", "agent_name", "metadata.capability"} {
				s, ok := memberAt(b.steps()[i], path).(string)
				if !ok || s == "" {
					continue
				}
				for _, v := range f(g, s) {
					if v.value == s {
						continue
					}
					c := b.with(name, fmt.Sprintf("step %d: %s %s", i+1, path, v.detail))
					parent, key := memberParent(c.steps()[i], path)
					parent[key] = v.value
					out = append(out, c)
				}
			}
		}
		return out
	}
}

// override adds members that look like overrides to seeds the policy rejects.
func override(name, doc string, set func(c *Case)) Mutation {
	return Mutation{
		Name: name, Doc: doc,
		Catch: "deny rules that never consult a member the planner or the caller controls to waive a denial",
		apply: func(_ *generator, b *base) []Case {
			if b.accepted {
				return nil
			}
			c := b.with(name, doc)
			set(&c)
			return []Case{c}
		},
	}
}

// overrideMembers are set to true by the override mutations.
var overrideMembers = []string{"allow", "approved", "override"}

func setAll(m map[string]any) {
	if m == nil {
		return
	}
	for _, k := range overrideMembers {
		m[k] = true
	}
}

func appendSteps(plan map[string]any, steps ...any) {
	list, _ := plan["steps"].([]any)
	plan["steps"] = append(list, steps...)
}

// plainSteps are the steps usable as filler: copies without dependencies, and without
// parameters when those hold {{step-…}} references.
func plainSteps(steps []map[string]any) []map[string]any {
	var out []map[string]any
	for _, s := range steps {
		c := cloneJSON(s).(map[string]any)
		delete(c, "depends_on")
		delete(c, "implicit_deps")
		if meta, ok := c["metadata"].(map[string]any); ok && strings.Contains(compactJSON(meta["parameters"]), "{{") {
			delete(meta, "parameters")
		}
		out = append(out, c)
	}
	return out
}

// stepIdentity names a wire step's identity for a detail.
func stepIdentity(s map[string]any) string {
	meta, _ := s["metadata"].(map[string]any)
	return fmt.Sprintf("%v/%v/%v", s["namespace"], s["agent_name"], meta["capability"])
}

func capitalize(s string) string {
	for i, r := range s {
		if unicode.IsLetter(r) {
			return s[:i] + string(unicode.ToUpper(r)) + s[i+len(string(r)):]
		}
	}
	return s
}

// homoglyphs maps Latin letters to Cyrillic letters that look the same.
var homoglyphs = map[rune]rune{
	'a': 'а', 'c': 'с', 'e': 'е', 'i': 'і', 'o': 'о', 'p': 'р', 's': 'ѕ', 'x': 'х', 'y': 'у',
}

// homoglyph replaces one letter of s that has a homoglyph, chosen by rng.
func homoglyph(rng *rand.Rand, s string) (string, bool) {
	runes := []rune(s)
	var at []int
	for i, r := range runes {
		if _, ok := homoglyphs[r]; ok {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return "", false
	}
	i := at[rng.IntN(len(at))]
	runes[i] = homoglyphs[runes[i]]
	return string(runes), true
}

// fullwidth maps printable ASCII to the fullwidth forms.
func fullwidth(s string) string {
	return strings.Map(func(r rune) rune {
		if r > ' ' && r < 0x7f {
			return r - 0x21 + 0xff01
		}
		return r
	}, s)
}
