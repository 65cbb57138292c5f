package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/schemas"
)

var yamlLine = regexp.MustCompile(`line (\d+)`)

// parseDocument parses src as exactly one YAML document whose root is a mapping, checks
// it for duplicate keys and validates it against schema. It returns the root mapping
// (nil when the file cannot be used at all), the problems, and the document sections
// that violate the schema ("" for the document as a whole, "catalog", "hooks/2", ...)
// so the caller can still compile the valid rest and report its problems too.
func parseDocument(src *builtin.Source, schema *jsonschema.Schema) (*yaml.Node, diag.List, map[string]bool) {
	dec := yaml.NewDecoder(bytes.NewReader(src.Data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, diag.List{src.ErrorAt(diag.KindSchema, diag.Pos{Line: 1, Column: 1}, "", "the file is empty")}, nil
		}
		return nil, diag.List{yamlError(src, err)}, nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, diag.List{src.Errorf(diag.KindYAMLSyntax, &extra, "", "a file holds exactly one YAML document")}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, diag.List{src.Errorf(diag.KindSchema, root, "", "the document must be a mapping")}, nil
	}
	if errs := duplicateKeys(src, root, ""); len(errs) > 0 {
		return nil, errs, nil
	}
	var v any
	if err := root.Decode(&v); err != nil {
		return nil, diag.List{yamlError(src, err)}, nil
	}
	resolveAliases(root)
	var errs diag.List
	broken := map[string]bool{}
	for _, viol := range schemas.Validate(schema, v) {
		errs = append(errs, schemaError(src, root, viol))
		broken[section(viol.Path)] = true
	}
	return root, errs, broken
}

// section names the part of a document a schema path falls in: "hooks/N" or
// "tests/N" for a list entry, the top-level key otherwise, "" for the document itself.
func section(path []string) string {
	switch {
	case len(path) == 0:
		return ""
	case len(path) >= 2 && (path[0] == "hooks" || path[0] == "tests"):
		return path[0] + "/" + path[1]
	}
	return path[0]
}

func yamlError(src *builtin.Source, err error) *diag.Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = strings.TrimPrefix(msg, m[0]+": ")
	}
	return src.ErrorAt(diag.KindYAMLSyntax, diag.Pos{Line: line, Column: min(line, 1)}, "", msg)
}

// duplicateKeys reports every mapping key that repeats an earlier key of its mapping.
func duplicateKeys(src *builtin.Source, n *yaml.Node, field string) diag.List {
	var errs diag.List
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if first, dup := seen[k.Value]; dup {
				errs = append(errs, src.Errorf(diag.KindDuplicateKey, k, joinField(field, k.Value), "key %q is already defined at line %d", k.Value, first.Line))
			} else {
				seen[k.Value] = k
			}
			errs = append(errs, duplicateKeys(src, n.Content[i+1], joinField(field, k.Value))...)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			errs = append(errs, duplicateKeys(src, item, field+"["+strconv.Itoa(i)+"]")...)
		}
	}
	return errs
}

// resolveAliases makes the tree under n read as the value yaml.v3 decodes: every alias
// is replaced by the node it names and every merge key (<<) is expanded into its
// mapping, explicit keys first, then the merged mappings' keys in order, the first of
// each key winning. The compile steps read nodes, so they then see what the schema
// validated. It must run only after n decoded without error, which rules out alias
// cycles and excessive aliasing. Aliased nodes are shared, not copied: each node is
// visited once, where it is defined, and errors point at the anchored definition.
func resolveAliases(n *yaml.Node) {
	for i, c := range n.Content {
		if c.Kind != yaml.AliasNode {
			resolveAliases(c)
			continue
		}
		for c.Kind == yaml.AliasNode && c.Alias != nil {
			c = c.Alias
		}
		n.Content[i] = c
	}
	if n.Kind == yaml.MappingNode {
		expandMerges(n)
	}
}

// expandMerges replaces the merge keys of mapping n, whose values are resolved
// already, by the keys they merge.
func expandMerges(n *yaml.Node) {
	var merged []*yaml.Node
	content := make([]*yaml.Node, 0, len(n.Content))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Kind != yaml.ScalarNode || k.ShortTag() != "!!merge":
			content = append(content, k, v)
		case v.Kind == yaml.SequenceNode:
			merged = append(merged, v.Content...)
		default:
			merged = append(merged, v)
		}
	}
	if merged == nil {
		return
	}
	seen := map[string]bool{}
	keyOf := func(k *yaml.Node) string { return k.ShortTag() + "\x00" + k.Value }
	for i := 0; i < len(content); i += 2 {
		seen[keyOf(content[i])] = true
	}
	for _, m := range merged {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if k := m.Content[i]; !seen[keyOf(k)] {
				seen[keyOf(k)] = true
				content = append(content, k, m.Content[i+1])
			}
		}
	}
	n.Content = content
}

func joinField(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// schemaError places a schema violation at the node its path names: the key itself for
// an unexpected key (unknown_key, or schema for a known key a `false` subschema forbids
// there, like rego beside deny_if), else the value.
func schemaError(src *builtin.Source, root *yaml.Node, v schemas.Violation) *diag.Error {
	kind := diag.KindSchema
	if v.Keyword == "additionalProperties" || v.Keyword == "unevaluatedProperties" {
		kind = diag.KindUnknownKey
	}
	node, key, field := root, (*yaml.Node)(nil), ""
	for _, seg := range v.Path {
		next, k := child(node, seg)
		if next == nil {
			break
		}
		if k != nil {
			field = joinField(field, seg)
		} else {
			field += "[" + seg + "]"
		}
		node, key = next, k
	}
	at, msg := node, v.Message
	if (kind == diag.KindUnknownKey || v.Keyword == "false") && key != nil {
		at = key // a key that is unknown, or known but not allowed here
	}
	switch {
	case kind == diag.KindUnknownKey && isStepKey(v.Path):
		kind = diag.KindUnknownAction
		msg = fmt.Sprintf("unknown action %q%s (known: %s)", v.Path[4], diag.DidYouMean(v.Path[4], builtin.Names()), strings.Join(builtin.Names(), ", "))
	case kind == diag.KindUnknownKey && len(v.Path) > 0:
		msg += diag.DidYouMean(v.Path[len(v.Path)-1], v.Known)
	}
	return src.Errorf(kind, at, field, "%s", msg)
}

// isStepKey reports whether a schema path names the action key of a hook step,
// hooks/N/steps/M/<action>: the schema rejects an unknown action there.
func isStepKey(path []string) bool {
	return len(path) == 5 && path[0] == "hooks" && path[2] == "steps"
}

// child returns the value under seg of a mapping (and its key node) or a sequence;
// nothing for a nil node.
func child(n *yaml.Node, seg string) (value, key *yaml.Node) {
	if n == nil {
		return nil, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				return n.Content[i+1], n.Content[i]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i], nil
		}
	}
	return nil, nil
}

// get returns the value of key in mapping n, or nil.
func get(n *yaml.Node, key string) *yaml.Node {
	v, _ := child(n, key)
	return v
}

// contentOf returns the children of n, nil for a nil node.
func contentOf(n *yaml.Node) []*yaml.Node {
	if n == nil {
		return nil
	}
	return n.Content
}
