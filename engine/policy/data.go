package policy

import (
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/policy/internal/regovalue"
)

// dataNode is one node of the merged data document: an object (children != nil) or a
// non-object leaf. file is the data file that created the node, for conflict messages.
type dataNode struct {
	file     string
	children map[string]*dataNode
	leaf     ast.Value
}

func newObjectNode(file string) *dataNode {
	return &dataNode{file: file, children: map[string]*dataNode{}}
}

// child returns the node at key, or nil.
func (n *dataNode) child(key string) *dataNode {
	if n == nil || n.children == nil {
		return nil
	}
	return n.children[key]
}

// toJSON converts the subtree to a fresh JSON-shaped value.
func (n *dataNode) toJSON() (any, error) {
	if n.children == nil {
		return ast.JSON(n.leaf)
	}
	obj := make(map[string]any, len(n.children))
	for k, c := range n.children {
		v, err := c.toJSON()
		if err != nil {
			return nil, err
		}
		obj[k] = v
	}
	return obj, nil
}

// mergeData merges the data files, in order, into one document. Objects merge key by
// key; two files may set the same path only to equal values. Every conflict and every
// invalid value is reported; the returned root is usable only when errs is empty.
func mergeData(files []DataFile) (*dataNode, diag.List) {
	root := newObjectNode("")
	var errs diag.List
	for _, f := range files {
		v, err := regovalue.Of(f.Value)
		if err != nil {
			errs = append(errs, &diag.Error{Kind: diag.KindDataSyntax, File: f.File, Message: "value is not JSON-shaped: " + err.Error()})
			continue
		}
		if len(f.Path) == 0 {
			if _, ok := v.(ast.Object); !ok {
				errs = append(errs, &diag.Error{Kind: diag.KindDataSyntax, File: f.File, Message: "a data file mounted at the root must hold an object, not " + ast.ValueName(v)})
				continue
			}
		}
		m := merger{file: f.File}
		m.mount(root, f.Path, v)
		errs = append(errs, m.errs...)
	}
	return root, errs
}

// merger merges the value of one data file.
type merger struct {
	file string
	errs diag.List
}

func (m *merger) conflict(path []string, format string, args ...any) {
	m.errs = append(m.errs, &diag.Error{
		Kind:    diag.KindDataConflict,
		File:    m.file,
		Message: dataPath(path) + ": " + fmt.Sprintf(format, args...),
	})
}

// mount walks (creating objects as needed) to path and merges v there.
func (m *merger) mount(root *dataNode, path []string, v ast.Value) {
	n := root
	for i, key := range path[:max(len(path)-1, 0)] {
		next := n.child(key)
		if next == nil {
			next = newObjectNode(m.file)
			n.children[key] = next
		}
		if next.children == nil {
			m.conflict(path[:i+1], "%s sets a non-object value here, so %s cannot mount below it", quoteFile(next.file), dataPath(path))
			return
		}
		n = next
	}
	if len(path) == 0 {
		m.mergeObject(root, nil, v.(ast.Object))
		return
	}
	m.put(n, path, v)
}

// put merges v into parent under the last key of path.
func (m *merger) put(parent *dataNode, path []string, v ast.Value) {
	key := path[len(path)-1]
	existing := parent.children[key]
	obj, isObj := v.(ast.Object)
	switch {
	case existing == nil && isObj:
		n := newObjectNode(m.file)
		parent.children[key] = n
		m.mergeObject(n, path, obj)
	case existing == nil:
		parent.children[key] = &dataNode{file: m.file, leaf: v}
	case isObj && existing.children != nil:
		m.mergeObject(existing, path, obj)
	case isObj:
		m.conflict(path, "an object conflicts with %s from %s", ast.ValueName(existing.leaf), quoteFile(existing.file))
	case existing.children != nil:
		m.conflict(path, "%s conflicts with an object from %s", ast.ValueName(v), quoteFile(existing.file))
	case existing.leaf.Compare(v) != 0:
		m.conflict(path, "%s conflicts with %s from %s", abbreviate(v), abbreviate(existing.leaf), quoteFile(existing.file))
	}
}

func (m *merger) mergeObject(n *dataNode, path []string, obj ast.Object) {
	obj.Foreach(func(k, v *ast.Term) {
		key, ok := k.Value.(ast.String)
		if !ok {
			m.errs = append(m.errs, &diag.Error{Kind: diag.KindDataSyntax, File: m.file, Message: dataPath(path) + ": object key " + k.String() + " is not a string"})
			return
		}
		m.put(n, append(path[:len(path):len(path)], string(key)), v.Value)
	})
}

// dataPath renders a data path as a Rego reference.
func dataPath(path []string) string {
	ref := ast.Ref{ast.DefaultRootDocument}
	for _, p := range path {
		ref = append(ref, ast.StringTerm(p))
	}
	return ref.String()
}

func quoteFile(file string) string {
	if file == "" {
		return "another data file"
	}
	return file
}

// abbreviate renders a value for a message, shortened to a bounded length.
func abbreviate(v ast.Value) string {
	const limit = 64
	s := v.String()
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return strings.ToValidUTF8(s, "")
}

// ruleDataConflicts reports every rule whose path is also set by data, or lies below a
// non-object data value. Each path is reported once, at its first rule.
func ruleDataConflicts(modules []*ast.Module, root *dataNode) diag.List {
	var errs diag.List
	seen := map[string]bool{}
	for _, mod := range modules {
		for _, rule := range mod.Rules {
			path, ok := stringPath(rule.Ref().GroundPrefix())
			if !ok || seen[strings.Join(path, "\x00")] {
				continue
			}
			if holder := dataAt(root, path); holder != nil {
				seen[strings.Join(path, "\x00")] = true
				p := positionOf(rule.Location)
				errs = append(errs, &diag.Error{
					Kind: diag.KindDataConflict, File: p.file, Line: p.line, Column: p.col,
					Message: "rule " + dataPath(path) + " conflicts with data from " + quoteFile(holder.file),
				})
			}
		}
	}
	return errs
}

// dataAt returns the data node at path, or the non-object node above it, or nil.
func dataAt(root *dataNode, path []string) *dataNode {
	n := root
	for _, key := range path {
		n = n.child(key)
		if n == nil || n.children == nil {
			return n
		}
	}
	return n
}

// stringPath converts a data reference to its path below data. ok is false when the
// reference does not start at data or has a part that is not a string.
func stringPath(ref ast.Ref) ([]string, bool) {
	if len(ref) == 0 || !ref[0].Equal(ast.DefaultRootDocument) {
		return nil, false
	}
	path := make([]string, 0, len(ref)-1)
	for _, t := range ref[1:] {
		s, ok := t.Value.(ast.String)
		if !ok {
			return nil, false
		}
		path = append(path, string(s))
	}
	return path, true
}
