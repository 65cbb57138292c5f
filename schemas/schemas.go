// Package schemas holds agentd's JSON Schemas (draft 2020-12) — the HookSet config file,
// the RoutingPlan API body and the HookTests file — embedded in the binary, compiled
// once, and a Validate that flattens schema errors into sorted Violations whose Path
// the loader maps back to a yaml.Node position.
//
// The schema files are the contract of the config format: editors use them through
// `# yaml-language-server: $schema=...`, File gives the bytes to whoever publishes
// them, and the loader validates every document before compiling it. Rules a schema
// cannot express (one file per settings key, one required hook, CEL and Rego validity)
// are the loader's.
//
// The HookSet schema is written by hand except its action $defs (step and action.<name>),
// which `go generate ./builtin` writes from the builtin registry; a test there fails when
// they drift. Everything else in the file may be edited freely.
//
// Compiled schemas are immutable and safe for concurrent use. An embedded schema that
// does not compile is a programming error: the first accessor call panics, and the
// package tests catch it.
package schemas

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Embedded schema file names, as File and the daemon use them.
const (
	HookSetFile     = "hookset.schema.json"
	RoutingPlanFile = "routing_plan.schema.json"
	HookTestsFile   = "hooktests.schema.json"
)

// baseURL is the common prefix of the schemas' $id values; cross-file $refs resolve
// against it, never over the network.
const baseURL = "https://agentd.dev/schemas/"

//go:embed *.schema.json
var files embed.FS

// Names returns the embedded schema file names, sorted.
func Names() []string {
	names, err := fs.Glob(files, "*.schema.json")
	if err != nil {
		panic(err) // the pattern is constant and valid
	}
	return names
}

// File returns a copy of the raw bytes of the embedded schema file name (see Names),
// or nil when there is no such file.
func File(name string) []byte {
	b, err := files.ReadFile(name)
	if err != nil {
		return nil
	}
	return b
}

// HookSet returns the compiled schema of a hooks/*.yaml document.
func HookSet() *jsonschema.Schema { return compiled()[HookSetFile] }

// RoutingPlan returns the compiled schema of a RoutingPlan JSON document.
func RoutingPlan() *jsonschema.Schema { return compiled()[RoutingPlanFile] }

// HookTests returns the compiled schema of a tests/*.yaml document.
func HookTests() *jsonschema.Schema { return compiled()[HookTestsFile] }

var compiled = sync.OnceValue(func() map[string]*jsonschema.Schema {
	return mustCompile(files)
})

// mustCompile compiles every *.schema.json file of fsys, each registered under
// baseURL+name so they may reference one another, and panics on any failure.
func mustCompile(fsys fs.FS) map[string]*jsonschema.Schema {
	names, err := fs.Glob(fsys, "*.schema.json")
	if err != nil {
		panic(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			panic(fmt.Sprintf("schemas: read %s: %v", name, err))
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			panic(fmt.Sprintf("schemas: parse %s: %v", name, err))
		}
		if err := c.AddResource(baseURL+name, doc); err != nil {
			panic(fmt.Sprintf("schemas: add %s: %v", name, err))
		}
	}
	out := make(map[string]*jsonschema.Schema, len(names))
	for _, name := range names {
		s, err := c.Compile(baseURL + name)
		if err != nil {
			panic(fmt.Sprintf("schemas: compile %s: %v", name, err))
		}
		out[name] = s
	}
	return out
}

// noLoader refuses every URL that was not added as a resource, so compiling never
// reads files or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schemas: %s is not an embedded schema", url)
}
