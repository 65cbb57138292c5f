package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Payload fields of a decision event: what the call was given and what it answered.
// Mask paths start at one of them.
var LogPayloadFields = []string{
	"request", "metadata", "enrichments", "plan", "prior_steps", "result", "call",
	"accepted_plan", "response",
}

// wildcard is the path segment that matches every key of an object and every element
// of a list.
const wildcard = "*"

// LogPath is a parsed mask path: the payload field it starts at, then one segment per
// level below it (a key, a list index, or "*"), and the places holding copies of what
// it names (logcopies.go).
type LogPath struct {
	text   string
	segs   []string
	copies []logCopy
}

// String returns the path as written.
func (p LogPath) String() string { return p.text }

// ParseLogPath parses a mask path: dot-separated segments whose first names a payload
// field (LogPayloadFields); a segment is a key of letters, digits, '_', '-' or ':', a
// list index, or "*"; "name[*]" and "name[3]" are "name.*" and "name.3".
func ParseLogPath(s string) (LogPath, error) {
	if strings.TrimSpace(s) == "" {
		return LogPath{}, fmt.Errorf("a mask path is empty")
	}
	var segs []string
	for _, part := range strings.Split(s, ".") {
		name, subs, err := splitIndexes(part)
		if err != nil {
			return LogPath{}, fmt.Errorf("mask path %q: %v", s, err)
		}
		segs = append(append(segs, name), subs...)
	}
	for _, seg := range segs {
		if seg != wildcard && !validKey(seg) {
			return LogPath{}, fmt.Errorf("mask path %q: segment %q may hold only letters, digits, '_', '-' and ':' (or be *)", s, seg)
		}
	}
	if !slices.Contains(LogPayloadFields, segs[0]) {
		return LogPath{}, fmt.Errorf("mask path %q starts at %q, which is no payload field (known: %s)", s, segs[0], strings.Join(LogPayloadFields, ", "))
	}
	return LogPath{text: s, segs: segs, copies: copiesOf(segs)}, nil
}

// splitIndexes splits "name[*][2]" into "name" and its index segments.
func splitIndexes(part string) (string, []string, error) {
	open := strings.IndexByte(part, '[')
	if open < 0 {
		if part == "" {
			return "", nil, fmt.Errorf("an empty segment")
		}
		return part, nil, nil
	}
	name, rest := part[:open], part[open:]
	if name == "" {
		return "", nil, fmt.Errorf("an index needs a name before it, as in steps[*]")
	}
	var subs []string
	for rest != "" {
		end := strings.IndexByte(rest, ']')
		if rest[0] != '[' || end < 0 {
			return "", nil, fmt.Errorf("%q: an index is [*] or [N]", part)
		}
		idx := rest[1:end]
		if n, err := strconv.Atoi(idx); idx != wildcard && (err != nil || n < 0) {
			return "", nil, fmt.Errorf("%q: an index is [*] or [N]", part)
		}
		subs, rest = append(subs, idx), rest[end+1:]
	}
	return name, subs, nil
}

func validKey(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == ':':
		default:
			return false
		}
	}
	return s != ""
}

// MaskRule is one compiled mask: a path, and the value that replaces what it names, or
// none, to erase it.
type MaskRule struct {
	Path LogPath
	// Replace is set when Value replaces what the path names; else it is erased.
	Replace bool
	Value   any
}

// apply returns payload with the rule applied at its path and at every copy of what
// it names (copiesOf) that src, the unmasked payload, holds, and the paths that named
// something: the rule's own as written, then each copy's, dot-separated. payload is
// never changed: the maps and lists on the way to what the rule changes are copied,
// and typed values (plans, calls) become their JSON form first.
func (r *MaskRule) apply(payload map[string]any, src *shapedPayload) (map[string]any, []string) {
	var named []string
	at := func(segs []string, text string) {
		if out, ok := r.at(payload, segs); ok {
			payload, named = out.(map[string]any), append(named, text)
		}
	}
	at(r.Path.segs, r.Path.text)
	for _, c := range r.Path.copies {
		for _, segs := range c.paths(src) {
			at(segs, strings.Join(segs, "."))
		}
	}
	return payload, named
}

// at applies the rule to v at the path segs. A typed value that has no JSON form is
// erased whole: what cannot be inspected cannot be shown.
func (r *MaskRule) at(v any, segs []string) (any, bool) {
	shaped, ok := jsonShaped(v)
	if !ok {
		return nil, true
	}
	switch t := shaped.(type) {
	case map[string]any:
		return r.inObject(t, segs)
	case []any:
		return r.inList(t, segs)
	}
	return v, false
}

func (r *MaskRule) inObject(m map[string]any, segs []string) (any, bool) {
	var out map[string]any
	visit := func(k string, child any) {
		next, ok := r.change(child, segs[1:])
		if !ok {
			return
		}
		if out == nil {
			out = maps.Clone(m)
		}
		if len(segs) == 1 && !r.Replace {
			delete(out, k)
		} else {
			out[k] = next
		}
	}
	if segs[0] != wildcard {
		if child, ok := m[segs[0]]; ok {
			visit(segs[0], child)
		}
		return out, out != nil
	}
	for k, child := range m {
		visit(k, child)
	}
	return out, out != nil
}

func (r *MaskRule) inList(l []any, segs []string) (any, bool) {
	var out []any
	for i, child := range l {
		if segs[0] != wildcard && segs[0] != strconv.Itoa(i) {
			continue
		}
		next, ok := r.change(child, segs[1:])
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(l)
		}
		out[i] = next // an erased element stays as null: the others keep their index
	}
	return out, out != nil
}

// change returns what child becomes: the replacement (or nil, erased) at the end of the
// path, else the rule applied below it.
func (r *MaskRule) change(child any, rest []string) (any, bool) {
	if len(rest) == 0 {
		if r.Replace {
			return r.Value, true
		}
		return nil, true
	}
	return r.at(child, rest)
}

// jsonShaped returns v as encoding/json would decode its encoding when it is a typed
// value (a plan, a call, a result); maps, lists and scalars are returned as they are.
// ok is false when v has no JSON form.
func jsonShaped(v any) (any, bool) {
	switch v.(type) {
	case nil, map[string]any, []any, string, bool, float64, int, int64, json.Number:
		return v, true
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var out any
	if json.Unmarshal(data, &out) != nil {
		return nil, false
	}
	return out, true
}
