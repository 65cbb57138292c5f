package policy

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/policy/reads"
)

// DefaultTimeout bounds one evaluation when Options.Timeout is not positive.
const DefaultTimeout = 100 * time.Millisecond

// Module is one Rego source file. File names it in diagnostics and must be unique.
type Module struct {
	File   string
	Source []byte
}

// DataFile is one decoded data document. Value is JSON-shaped (what encoding/json or a
// YAML decoder produces); Path is where it mounts below data, usually derived from the
// file's directory. An empty Path merges Value, which must then be an object, at the
// root.
type DataFile struct {
	File  string
	Path  []string
	Value any
}

// Options tunes a Bundle.
type Options struct {
	// Timeout bounds every evaluation of every query prepared from the bundle; zero or
	// negative means DefaultTimeout.
	Timeout time.Duration
}

// Bundle is a compiled set of Rego modules plus their data, built once by Compile. It is
// immutable and safe for concurrent use; nothing the caller passed to Compile is kept.
type Bundle struct {
	compiler *ast.Compiler
	store    storage.Store
	cache    *dataCache // what evaluations read of store
	data     *dataNode
	modules  []string
	packages []string
	timeout  time.Duration
	// deterministic: no module calls a non-deterministic built-in.
	deterministic bool
}

// Compile parses every module as Rego v1, compiles them together once with the network
// built-ins disabled, and merges the data files, in order, into one in-memory store.
// It reports every problem it finds as a diag.List: parse errors of every file, calls to
// disabled built-ins, compile errors (only when every module parsed, so that a broken
// file does not cause follow-on errors elsewhere), conflicting and invalid data, and
// rules whose path is also set by data.
func Compile(modules []Module, data []DataFile, opts Options) (*Bundle, error) {
	parsed, errs := parseModules(modules)
	unsafeErrs, unsafeAt := unsafeCalls(parsed)
	errs = append(errs, unsafeErrs...)
	root, dataErrs := mergeData(data)
	errs = append(errs, dataErrs...)
	errs = append(errs, ruleDataConflicts(parsed, root)...)

	var compiler *ast.Compiler
	if len(parsed) == len(modules) {
		var compileErrs diag.List
		compiler, compileErrs = compileModules(modules, parsed, unsafeAt)
		errs = append(errs, compileErrs...)
	}
	if len(errs) > 0 {
		return nil, errs.Normalize(0)
	}

	doc, err := root.toJSON()
	if err != nil {
		return nil, diag.List{{Kind: diag.KindDataSyntax, Message: err.Error()}}
	}
	b := &Bundle{
		compiler:      compiler,
		store:         inmem.NewFromObjectWithOpts(doc.(map[string]any), inmem.OptReturnASTValuesOnRead(true)),
		cache:         newDataCache(maxDataCacheNodes),
		data:          root,
		timeout:       cmp.Or(max(opts.Timeout, 0), DefaultTimeout),
		deterministic: reads.Deterministic(compiler),
	}
	for i, m := range parsed {
		b.modules = append(b.modules, modules[i].File)
		b.packages = append(b.packages, m.Package.Path.String())
	}
	slices.Sort(b.modules)
	slices.Sort(b.packages)
	b.packages = slices.Compact(b.packages)
	return b, nil
}

// Data returns a fresh copy of the merged data document the policies read as data,
// exactly as evaluation sees it.
func (b *Bundle) Data() (map[string]any, error) {
	doc, err := b.data.toJSON()
	if err != nil {
		return nil, err
	}
	return doc.(map[string]any), nil
}

// Modules returns the module file names, sorted.
func (b *Bundle) Modules() []string { return slices.Clone(b.modules) }

// parseModules parses every module, collecting every parse error.
func parseModules(modules []Module) ([]*ast.Module, diag.List) {
	opts := ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: capabilities()}
	var parsed []*ast.Module
	var errs diag.List
	seen := map[string]bool{}
	for _, m := range modules {
		if seen[m.File] {
			errs = append(errs, &diag.Error{Kind: diag.KindRegoCompile, File: m.File, Message: "duplicate module file name"})
			continue
		}
		seen[m.File] = true
		mod, err := ast.ParseModuleWithOpts(m.File, string(m.Source), opts)
		if err != nil {
			errs = append(errs, fromASTError(err, diag.KindRegoParse, m.File)...)
			continue
		}
		if bad := invalidHeads(mod); len(bad) > 0 {
			errs = append(errs, bad...)
			continue
		}
		parsed = append(parsed, mod)
	}
	return parsed, errs
}

// invalidHeads reports the rules whose head refers through a call, such as
// `f(x).a if { ... }`. OPA's parser refuses `f(x).a := 1` ("invalid rule head") but
// lets the form without a value through, and its compiler then panics on it; such a
// module is reported as the parser reports the other form, and is not compiled.
func invalidHeads(mod *ast.Module) diag.List {
	var errs diag.List
	for _, rule := range mod.Rules {
		for _, t := range rule.Head.Reference {
			if _, call := t.Value.(ast.Call); call {
				p := positionOf(rule.Location)
				errs = append(errs, &diag.Error{Kind: diag.KindRegoParse, File: p.file, Line: p.line, Column: p.col,
					Message: "invalid rule head: " + rule.Head.Reference.String()})
				break
			}
		}
	}
	return errs
}

// compileModules compiles the parsed modules (parsed[i] is modules[i]) together. Type
// errors at the position of a disabled built-in call are dropped: unsafeCalls has
// already reported them.
//
// A panic of OPA's compiler (a module shape its parser accepts and its compiler does
// not expect) is reported as a compile error of the bundle, so that a policy never
// takes down the process that loads it.
func compileModules(modules []Module, parsed []*ast.Module, unsafeAt map[position]bool) (_ *ast.Compiler, errs diag.List) {
	defer func() {
		if v := recover(); v != nil {
			errs = diag.List{{Kind: diag.KindRegoCompile, Message: fmt.Sprintf("OPA's compiler failed on these modules: %v", v)}}
		}
	}()
	byFile := make(map[string]*ast.Module, len(parsed))
	for i, m := range parsed {
		byFile[modules[i].File] = m
	}
	c := ast.NewCompiler().
		SetErrorLimit(0). // every error; the loader caps the report it prints
		WithCapabilities(capabilities()).
		WithDefaultRegoVersion(ast.RegoV1).
		WithUseTypeCheckAnnotations(true)
	c.Compile(byFile)
	for _, e := range c.Errors {
		if e.Code == ast.TypeErr && unsafeAt[positionOf(e.Location)] {
			continue
		}
		errs = append(errs, astError(e, diag.KindRegoCompile, ""))
	}
	return c, errs
}

// fromASTError converts a parser or compiler error to diagnostics of the given kind.
func fromASTError(err error, kind diag.Kind, file string) diag.List {
	astErrs, ok := err.(ast.Errors)
	if !ok {
		return diag.List{{Kind: kind, File: file, Message: err.Error()}}
	}
	out := make(diag.List, 0, len(astErrs))
	for _, e := range astErrs {
		out = append(out, astError(e, kind, file))
	}
	return out
}

func astError(e *ast.Error, kind diag.Kind, file string) *diag.Error {
	out := &diag.Error{Kind: kind, File: file, Message: e.Message}
	if e.Location != nil {
		out.File = cmp.Or(e.Location.File, file)
		out.Line, out.Column = e.Location.Row, e.Location.Col
	}
	return out
}
