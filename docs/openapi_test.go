package docs

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// documentURL is where the tests register the document, so that its local $refs
// resolve without any network.
const documentURL = "https://agentd.dev/openapi.json"

func document(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(OpenAPIJSON(), &doc); err != nil {
		t.Fatalf("openapi.yaml does not convert to a JSON object: %v", err)
	}
	return doc
}

// schemas returns components.schemas of the document.
func schemas(t *testing.T) map[string]any {
	t.Helper()
	s, _ := document(t)["components"].(map[string]any)["schemas"].(map[string]any)
	if len(s) == 0 {
		t.Fatal("openapi.yaml has no components.schemas")
	}
	return s
}

// TestOpenAPI_SchemasCompile compiles every schema of components.schemas as JSON
// Schema 2020-12 (the dialect of OpenAPI 3.1), which resolves each of their $refs.
func TestOpenAPI_SchemasCompile(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(OpenAPIJSON()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(documentURL, doc); err != nil {
		t.Fatal(err)
	}
	for name := range schemas(t) {
		if _, err := c.Compile(documentURL + "#/components/schemas/" + name); err != nil {
			t.Errorf("components.schemas.%s does not compile: %v", name, err)
		}
	}
	if got := document(t)["openapi"]; got != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", got)
	}
}

// enumFamilies pairs each enum schema of the document with the Go constants whose
// values it lists: the exported string constants of dir whose name starts with
// prefix, or, for a family without a common prefix, whose declared type is typ.
// Constants are found by parsing the source, so a family may be typed or untyped.
var enumFamilies = []struct {
	schema, dir, prefix, typ string
}{
	{schema: "Stage", dir: "../engine", prefix: "Stage"},
	{schema: "InvocationStatus", dir: "../engine", prefix: "Invocation"},
	{schema: "FailurePolicy", dir: "../engine", prefix: "Fail"},
	{schema: "Action", dir: "../engine", prefix: "Action"},
	{schema: "DecisionReason", dir: "../engine", prefix: "Reason"},
	{schema: "PlanRuleCode", dir: "../engine", prefix: "PlanCode"},
	{schema: "EffectStatus", dir: "../engine", prefix: "Effect"},
	{schema: "RecordStatus", dir: "../engine", prefix: "Record"},
	{schema: "RequestLifecycle", dir: "../engine", prefix: "Lifecycle"},
	{schema: "ShortCircuitKind", dir: "../engine", prefix: "Kind"},
	{schema: "PlanMode", dir: "../engine", prefix: "Mode"},
	{schema: "FinalResponseSource", dir: "../engine", prefix: "Source"},
	{schema: "StageCallOutcome", dir: "../engine", prefix: "Outcome"},
	{schema: "RefusalCode", dir: "../engine", prefix: "Refused"},
	{schema: "BindingMode", dir: "../engine", typ: "BindingMode"},
	{schema: "PlanBindingCode", dir: "../engine", prefix: "Code"},
	{schema: "CheckOutcome", dir: "../engine", prefix: "Check"},
	{schema: "RunStatus", dir: "../engine", prefix: "Run"},
	{schema: "Cause", dir: "../engine", prefix: "Cause"},
	{schema: "RuleMode", dir: "../engine", prefix: "Rule"},
	{schema: "Operation", dir: "../engine/op", typ: "Operation"},
	{schema: "ErrorType", dir: "../api", prefix: "Type"},
}

// TestOpenAPI_EnumsMatchGoConstants fails when a constant of an enum family has no
// value in the document's enum, or the enum lists a value no constant has.
func TestOpenAPI_EnumsMatchGoConstants(t *testing.T) {
	all := schemas(t)
	for _, f := range enumFamilies {
		t.Run(f.schema, func(t *testing.T) {
			consts := familyConstants(t, f.dir, f.prefix, f.typ)
			if len(consts) == 0 {
				t.Fatalf("no constants found in %s for components.schemas.%s; did the family move? update enumFamilies", f.dir, f.schema)
			}
			schema, _ := all[f.schema].(map[string]any)
			enum := stringList(schema["enum"])
			if enum == nil {
				t.Fatalf("docs/openapi.yaml: components.schemas.%s has no enum of strings", f.schema)
			}
			for _, c := range consts {
				if !slices.Contains(enum, c.value) {
					t.Errorf("%s = %q (%s) is not documented: add `- %s` to components.schemas.%s.enum in docs/openapi.yaml and say what it means in that schema's description",
						c.name, c.value, c.file, c.value, f.schema)
				}
			}
			for _, v := range enum {
				if !slices.ContainsFunc(consts, func(c constant) bool { return c.value == v }) {
					t.Errorf("docs/openapi.yaml: components.schemas.%s.enum lists %q, but no constant of %s has that value: remove it, or declare the constant",
						f.schema, v, f.dir)
				}
			}
		})
	}
}

// TestOpenAPI_EveryErrorTypeHasASchema: each ErrorType value is the error.type const
// of exactly one error schema, which the routes' responses reference.
func TestOpenAPI_EveryErrorTypeHasASchema(t *testing.T) {
	all := schemas(t)
	owners := map[string][]string{}
	for name, s := range all {
		if typ, ok := dig(s, "properties", "error", "properties", "type", "const").(string); ok {
			owners[typ] = append(owners[typ], name)
		}
	}
	types, _ := all["ErrorType"].(map[string]any)
	for _, typ := range stringList(types["enum"]) {
		switch len(owners[typ]) {
		case 0:
			t.Errorf("error type %q has no schema: add one to components.schemas in docs/openapi.yaml, shaped {error: {type: {const: %s}, message, ...its details}}, and reference it from the responses that answer it", typ, typ)
		case 1:
		default:
			t.Errorf("error type %q has several schemas: %v", typ, owners[typ])
		}
		delete(owners, typ)
	}
	for typ, names := range owners {
		t.Errorf("components.schemas %v describe error type %q, which is not in ErrorType.enum", names, typ)
	}
}

type constant struct{ name, value, file string }

// familyConstants parses the non-test Go files of dir and returns its exported string
// constants named with prefix (or, when typ is set, declared with that type).
func familyConstants(t *testing.T, dir, prefix, typ string) []constant {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Base(dir)
	var out []constant
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !name.IsExported() || !member(vs, name.Name, prefix, typ) {
						continue
					}
					if i >= len(vs.Values) {
						t.Fatalf("%s: %s has no value of its own; give it a string literal", fset.Position(name.Pos()), name.Name)
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: %s is not a string literal; the enum test reads values from the source", fset.Position(name.Pos()), name.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, constant{name: pkg + "." + name.Name, value: v, file: filepath.Base(path)})
				}
			}
		}
	}
	return out
}

func member(vs *ast.ValueSpec, name, prefix, typ string) bool {
	if typ != "" {
		id, ok := vs.Type.(*ast.Ident)
		return ok && id.Name == typ
	}
	return strings.HasPrefix(name, prefix)
}

func stringList(v any) []string {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func TestYAMLToJSON_RejectsNonStringKeys(t *testing.T) {
	_, err := yamlToJSON([]byte("responses:\n  200: {description: ok}\n"))
	if err == nil || !strings.Contains(err.Error(), "/responses") {
		t.Fatalf("an unquoted status code converted: %v", err)
	}
}
