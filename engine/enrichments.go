package engine

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// PromoteMetadata copies the well-known context that callers pass as metadata into
// enrichments, before any before_planning hook runs. It does nothing when metadata is
// empty. A non-empty metadata.conversation_history string and any present
// metadata.rag_context are copied; otherwise a valid metadata.conversation_turns list
// (objects with string role and content and an optional string timestamp) is rendered
// to conversation_history, one "role: content" line per turn ("[timestamp] role:
// content" when timed). One bad turn rejects the whole list. No other key is promoted.
func PromoteMetadata(pctx *PipelineContext) {
	if len(pctx.Metadata) == 0 {
		return
	}
	if pctx.Enrichments == nil {
		pctx.Enrichments = make(map[string]any)
	}
	if rag, ok := pctx.Metadata[EnrichmentRAGContext]; ok {
		pctx.Enrichments[EnrichmentRAGContext] = rag
	}
	if h, _ := pctx.Metadata[EnrichmentConversationHistory].(string); h != "" {
		pctx.Enrichments[EnrichmentConversationHistory] = h
		return
	}
	if turns, ok := renderTurns(pctx.Metadata[MetadataConversationTurns]); ok {
		pctx.Enrichments[EnrichmentConversationHistory] = turns
	}
}

func renderTurns(v any) (string, bool) {
	var list []any
	switch t := v.(type) {
	case []any:
		list = t
	case []map[string]any:
		for _, m := range t {
			list = append(list, m)
		}
	default:
		return "", false
	}
	if len(list) == 0 {
		return "", false
	}
	var b strings.Builder
	for i, item := range list {
		turn, ok := item.(map[string]any)
		if !ok {
			return "", false
		}
		role, ok1 := turn["role"].(string)
		content, ok2 := turn["content"].(string)
		if !ok1 || !ok2 || role == "" {
			return "", false
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		if ts, present := turn["timestamp"]; present {
			s, ok := ts.(string)
			if !ok {
				return "", false
			}
			b.WriteString("[" + s + "] ")
		}
		b.WriteString(role + ": " + content)
	}
	return b.String(), true
}

// promptTags maps the well-known keys rendered inside a tag to that tag. turns is set
// for the section whose lines are role turns by design.
var promptTags = []struct {
	key, tag string
	turns    bool
}{
	{EnrichmentRAGContext, "agent_memory", false},
	{EnrichmentConversationHistory, "conversation_history", true},
	{EnrichmentActivityCoordination, "agent_coordination", false},
}

// RenderEnrichments renders the enrichments for a planning prompt: the well-known
// string ones first, rag_context, conversation_history and activity_coordination
// wrapped in <agent_memory>, <conversation_history> and <agent_coordination> tags, then
// user_profile verbatim; then every other key that is a tag name (RenderedKey), sorted,
// wrapped in a tag of its own name (<loyalty_tier>): a string as it is, any other value
// as JSON. Empty strings and nulls are not rendered, nor a well-known key's value that
// is not a string.
//
// Enrichment text is data, often retrieved from places an attacker can write to, so it
// cannot end its section or speak for a role: inside a value, the section tags
// (<agent_memory>, </conversation_history>, …, any case and spacing) and chat-template
// markers (<|…|>) have their '<' escaped as "&lt;", and a line that opens like a role
// turn ("System:", "assistant:", …) is quoted with "> ", except in conversation_history,
// whose lines are role turns by design (it still cannot leave its section).
// user_profile keeps its own <user_profile> block, which the hook that writes it
// formats. In the section of another key, every tag (<…>, </…>) is escaped so.
func RenderEnrichments(enrichments map[string]any) string {
	var b strings.Builder
	for _, t := range promptTags {
		if s, _ := enrichments[t.key].(string); s != "" {
			fmt.Fprintf(&b, "<%s>\n%s\n</%s>\n", t.tag, defang(s, sectionTags, !t.turns), t.tag)
		}
	}
	if s, _ := enrichments[EnrichmentUserProfile].(string); s != "" {
		b.WriteString(defang(s, wrappedTags, true))
		b.WriteByte('\n')
	}
	var keys []string
	for k := range enrichments {
		if RenderedKey(k) && !wellKnown(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		s, ok := enrichments[k].(string)
		if !ok && enrichments[k] != nil {
			s = string(encodeValue(enrichments[k]))
		}
		if s != "" {
			fmt.Fprintf(&b, "<%s>\n%s\n</%s>\n", k, defang(s, anyTag, true), k)
		}
	}
	return b.String()
}

// RenderedKey reports whether RenderEnrichments renders enrichment key k when it has a
// value: a well-known key, or a tag name (a letter or _, then letters, digits, _, - or
// ., at most 64 bytes) that is not one of the well-known sections' tags.
func RenderedKey(k string) bool {
	return wellKnown(k) || tagName.MatchString(k) && !sectionTags.MatchString("<"+k+">")
}

func wellKnown(k string) bool {
	return k == EnrichmentRAGContext || k == EnrichmentConversationHistory || k == EnrichmentActivityCoordination || k == EnrichmentUserProfile
}

var (
	// sectionTags matches every section tag, opening or closing.
	sectionTags = regexp.MustCompile(`(?i)<(\s*/?\s*(?:agent_memory|conversation_history|agent_coordination|user_profile)\s*>)`)
	// wrappedTags matches the tags of the wrapped sections only.
	wrappedTags = regexp.MustCompile(`(?i)<(\s*/?\s*(?:agent_memory|conversation_history|agent_coordination)\s*>)`)
	// anyTag matches every tag, opening or closing.
	anyTag = regexp.MustCompile(`<(\s*/?\s*[A-Za-z_][A-Za-z0-9_.-]*\s*>)`)
	// tagName matches an enrichment key rendered as its own tag.
	tagName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)
	// chatMarker matches the start of a chat-template marker such as <|im_start|>.
	chatMarker = regexp.MustCompile(`<(\|)`)
	// roleLine matches a line that opens like a role turn.
	roleLine = regexp.MustCompile(`(?im)^([ \t]*(?:system|assistant|user|developer|tool|human|ai)[ \t]*:)`)
)

// defang escapes the tags matches finds and chat-template markers in s and, with
// roles, quotes role-like line openings (see RenderEnrichments).
func defang(s string, tags *regexp.Regexp, roles bool) string {
	s = tags.ReplaceAllString(s, "&lt;$1")
	s = chatMarker.ReplaceAllString(s, "&lt;$1")
	if roles {
		s = roleLine.ReplaceAllString(s, "> $1")
	}
	return s
}

// enrichmentSnapshot holds the enrichments as they were before a hook ran. Immutable
// scalars (strings, numbers, booleans, nil) are kept as they are and compared by value;
// anything else is kept as its JSON encoding, so that in-place changes to a nested
// value are seen too.
type enrichmentSnapshot map[string]snapshotValue

type snapshotValue struct {
	scalar  any
	encoded []byte // nil for a scalar
}

func snapshotOf(v any) snapshotValue {
	switch v.(type) {
	case nil, string, bool, int, int64, float64:
		return snapshotValue{scalar: v}
	}
	return snapshotValue{encoded: encodeValue(v)}
}

func (v snapshotValue) equal(o snapshotValue) bool {
	if v.encoded == nil || o.encoded == nil {
		return v.encoded == nil && o.encoded == nil && v.scalar == o.scalar
	}
	return string(v.encoded) == string(o.encoded)
}

func (v snapshotValue) json() json.RawMessage {
	if v.encoded != nil {
		return v.encoded
	}
	return encodeValue(v.scalar)
}

func snapshotEnrichments(m map[string]any) enrichmentSnapshot {
	snap := make(enrichmentSnapshot, len(m))
	for k, v := range m {
		snap[k] = snapshotOf(v)
	}
	return snap
}

// encodeValue is json.Marshal that never fails nor panics: a value JSON cannot encode
// (or whose MarshalJSON panics) is recorded as the JSON string of its fmt rendering, so
// turning recording on never changes a request's outcome.
func encodeValue(v any) (b []byte) {
	defer func() {
		if recover() != nil {
			b, _ = json.Marshal(fmt.Sprintf("unencodable %T", v))
		}
	}()
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprintf("%v", v))
	}
	return b
}

type enrichmentChange struct {
	Key       string          `json:"key"`
	Operation string          `json:"operation"`
	Before    json.RawMessage `json:"before,omitempty"`
	After     json.RawMessage `json:"after,omitempty"`
}

// diff returns one planning_enrichment:<key> effect per added, updated or removed key
// of now relative to the snapshot, in sorted key order, and the snapshot of now (the
// next hook's starting point). Only changed values are encoded for the effect data.
func (s enrichmentSnapshot) diff(now map[string]any, started time.Time) ([]Effect, enrichmentSnapshot) {
	after := make(enrichmentSnapshot, len(now))
	var changed []string
	for k, v := range now {
		a := snapshotOf(v)
		after[k] = a
		if b, had := s[k]; !had || !b.equal(a) {
			changed = append(changed, k)
		}
	}
	for k := range s {
		if _, ok := now[k]; !ok {
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 {
		return nil, after
	}
	slices.Sort(changed)
	effects := make([]Effect, 0, len(changed))
	for _, k := range changed {
		before, had := s[k]
		now, has := after[k]
		change := enrichmentChange{Key: k}
		switch {
		case !had:
			change.Operation, change.After = "added", now.json()
		case !has:
			change.Operation, change.Before = "removed", before.json()
		default:
			change.Operation, change.Before, change.After = "updated", before.json(), now.json()
		}
		data, _ := json.Marshal(change)
		effects = append(effects, Effect{
			EffectID:      "planning_enrichment:" + k,
			SchemaVersion: 1,
			Name:          "planning enrichment " + k,
			Status:        EffectSucceeded,
			Summary:       change.Operation + " " + k,
			Data:          data,
			StartedAt:     started.UTC(),
			Duration:      time.Since(started),
		})
	}
	return effects, after
}
