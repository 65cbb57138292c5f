// Package apitest checks HTTP traffic against the API document (docs/openapi.yaml) in
// tests: which operations and statuses it lists, the schemas of their request and
// response bodies, and their query parameters. Every package that serves a route the
// document describes (the server, the gateways, the viewer) checks its answers with it.
package apitest

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentd-dev/agentd/docs"
)

// documentURL is the base URL the document's schemas are compiled under.
const documentURL = "https://agentd.dev/openapi.json"

// methods are the operation keys of an OpenAPI path item.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Document is the API document, decoded, with a compiler over its schemas (string
// formats asserted).
type Document struct {
	root     map[string]any
	paths    map[string]any
	compiler *jsonschema.Compiler
}

// Load decodes the embedded API document; a document without paths fails t.
func Load(t testing.TB) *Document {
	t.Helper()
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(docs.OpenAPIJSON()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(documentURL, raw); err != nil {
		t.Fatal(err)
	}
	root, _ := raw.(map[string]any)
	paths, _ := root["paths"].(map[string]any)
	if len(paths) == 0 {
		t.Fatal("docs/openapi.yaml has no paths")
	}
	return &Document{root: root, paths: paths, compiler: c}
}

// Operations returns every documented operation as "METHOD /path/{param}", sorted.
func (d *Document) Operations() []string {
	var out []string
	for path, item := range d.paths {
		for _, m := range methods {
			if _, ok := item.(map[string]any)[m]; ok {
				out = append(out, strings.ToUpper(m)+" "+path)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Documents reports whether the document has an operation for a served pattern (a
// path template, {param} matching only {param}); method "" asks for any operation on
// the path.
func (d *Document) Documents(method, pattern string) bool {
	for tmpl, item := range d.paths {
		if !SamePath(tmpl, pattern, true) {
			continue
		}
		ops := item.(map[string]any)
		if method == "" {
			return slices.ContainsFunc(methods, func(m string) bool { _, ok := ops[m]; return ok })
		}
		_, ok := ops[strings.ToLower(method)]
		return ok
	}
	return false
}

// Template returns the documented path template that path matches ({param} matches
// one segment), or "".
func (d *Document) Template(path string) string {
	for tmpl := range d.paths {
		if SamePath(tmpl, path, false) {
			return tmpl
		}
	}
	return ""
}

// Statuses returns the response keys ("200", "default" …) the document lists for an
// operation, sorted; none for an undocumented one.
func (d *Document) Statuses(method, tmpl string) []string {
	responses, _ := d.operation(method, tmpl)["responses"].(map[string]any)
	var out []string
	for status := range responses {
		out = append(out, status)
	}
	slices.Sort(out)
	return out
}

// CheckQuery fails t when query has a parameter the operation does not document.
func (d *Document) CheckQuery(t testing.TB, name, method, tmpl, query string) {
	t.Helper()
	values, err := url.ParseQuery(query)
	if err != nil {
		t.Fatalf("%s: query %q: %v", name, query, err)
	}
	params, _ := d.operation(method, tmpl)["parameters"].([]any)
	for param := range values {
		if !slices.ContainsFunc(params, func(p any) bool {
			m, _ := p.(map[string]any)
			return m["in"] == "query" && m["name"] == param
		}) {
			t.Errorf("%s: query parameter %q is not documented for %s %s", name, param, method, tmpl)
		}
	}
}

// Response returns the schema of the JSON body the document gives for a response key
// of the operation (nil for a non-JSON body), and whether the key is listed at all.
func (d *Document) Response(t testing.TB, method, tmpl, status string) (*jsonschema.Schema, bool) {
	t.Helper()
	resp, ok := d.operation(method, tmpl)["responses"].(map[string]any)[status].(map[string]any)
	if !ok {
		return nil, false
	}
	loc := "#/paths/" + pointer(tmpl) + "/" + strings.ToLower(method) + "/responses/" + status
	if ref, ok := resp["$ref"].(string); ok {
		loc = ref
		resp = d.resolve(t, ref)
	}
	content, _ := resp["content"].(map[string]any)
	if _, ok := content["application/json"]; !ok {
		return nil, true
	}
	return d.Schema(t, loc+"/content/application~1json/schema"), true
}

// RequestSchema returns the schema of the operation's JSON request body, or nil.
func (d *Document) RequestSchema(t testing.TB, method, tmpl string) *jsonschema.Schema {
	t.Helper()
	if _, ok := d.operation(method, tmpl)["requestBody"]; !ok {
		return nil
	}
	return d.Schema(t, "#/paths/"+pointer(tmpl)+"/"+strings.ToLower(method)+"/requestBody/content/application~1json/schema")
}

// Schema compiles the schema at a fragment of the document ("#/components/…").
func (d *Document) Schema(t testing.TB, fragment string) *jsonschema.Schema {
	t.Helper()
	s, err := d.compiler.Compile(documentURL + fragment)
	if err != nil {
		t.Fatalf("docs/openapi.yaml: schema %s does not compile: %v", fragment, err)
	}
	return s
}

// Validate fails t when body is not JSON or does not match s (nil: the document gives
// no JSON body there); what names the body.
func Validate(t testing.TB, what string, s *jsonschema.Schema, body []byte) {
	t.Helper()
	if s == nil {
		t.Errorf("%s: docs/openapi.yaml gives no JSON body here: %s", what, body)
		return
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Errorf("%s: not JSON: %v: %s", what, err, body)
		return
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s does not match docs/openapi.yaml: %v\nbody: %s", what, err, body)
	}
}

// SamePath compares two paths segment by segment. A {param} segment of a matches any
// non-empty segment of b; with bothTemplates, a {param} matches only a {param}.
func SamePath(a, b string, bothTemplates bool) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	if len(as) != len(bs) {
		return false
	}
	param := func(s string) bool { return strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") }
	for i := range as {
		switch {
		case param(as[i]) && bothTemplates:
			if !param(bs[i]) {
				return false
			}
		case param(as[i]):
			if bs[i] == "" {
				return false
			}
		case as[i] != bs[i]:
			return false
		}
	}
	return true
}

// operation returns the operation object of method on tmpl, or nil.
func (d *Document) operation(method, tmpl string) map[string]any {
	op, _ := d.paths[tmpl].(map[string]any)[strings.ToLower(method)].(map[string]any)
	return op
}

// resolve follows a local "#/components/…" reference.
func (d *Document) resolve(t testing.TB, ref string) map[string]any {
	t.Helper()
	var v any = d.root
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		v, _ = v.(map[string]any)[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("docs/openapi.yaml: %s does not resolve", ref)
	}
	return m
}

// pointer escapes one JSON-pointer token for use in a URL fragment.
func pointer(token string) string {
	return url.PathEscape(strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1"))
}
