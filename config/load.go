package config

import (
	"cmp"
	"log/slog"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/engine/policy"
	"github.com/agentd-dev/agentd/schemas"
)

// Options configure Load. The zero value is valid.
type Options struct {
	// Services are the run-time dependencies of the built-in actions; nil fields get
	// in-process defaults.
	Services       builtin.Services
	TracerProvider trace.TracerProvider
	// SpanPayloads puts tool call arguments and results on execute_tool spans (see
	// engine.WithSpanPayloads).
	SpanPayloads  bool
	MeterProvider metric.MeterProvider
	Logger        *slog.Logger
	// MaxErrors caps the reported errors; 0 means 50.
	MaxErrors int
}

// document is one parsed HookSet file. broken holds the sections that violate the
// schema (see section); they are not compiled, the rest is.
type document struct {
	src    *builtin.Source
	root   *yaml.Node
	broken map[string]bool
}

// usable reports whether a section of d can be compiled.
func (d document) usable(sec string) bool {
	return !d.broken[""] && !d.broken[sec]
}

// list returns the entries of top-level sequence key, or nil when the section is
// absent or broken.
func (d document) list(key string) []*yaml.Node {
	n := get(d.root, key)
	if n == nil || !d.usable(key) {
		return nil
	}
	return n.Content
}

type loader struct {
	opts       Options
	errs       diag.List
	docs       []document
	settings   settings
	cel        *expr.Compiler
	rego       *policy.Bundle
	regoFailed bool
	queries    []string
	reads      builtin.InputReads
	mounts     []DataMount
	observers  []ObserverInfo
}

// Load reads and compiles the config directory dir into a Generation. On any problem it
// returns a diag.List with every problem found (sorted, deduplicated and capped) and no
// generation: a generation compiles completely or not at all.
func Load(dir string, opts Options) (*Generation, error) {
	opts.Services = opts.Services.WithDefaults()
	if opts.Logger == nil {
		opts.Logger = opts.Services.Logger
	}
	if opts.MaxErrors <= 0 {
		opts.MaxErrors = 50
	}
	cf, errs := readConfig(dir)
	l := &loader{opts: opts, errs: errs, reads: builtin.InputReads{}}
	for _, src := range cf.hooks {
		root, errs, broken := parseDocument(src, schemas.HookSet())
		l.errs = append(l.errs, errs...)
		if root != nil {
			l.docs = append(l.docs, document{src: src, root: root, broken: broken})
		}
	}
	l.readSettings()
	cel, err := expr.NewCompiler(expr.Options{CostLimit: l.settings.celCostLimit})
	if err != nil {
		return nil, err
	}
	l.cel = cel
	l.compilePolicies(cf)
	mcp, mcpAgents := l.compileMCPGateway(dir)
	catalog := l.compileCatalog(mcpAgents)
	hooks, infos := l.compileHooks()
	runner, guards, revision := l.compileGuards()
	labels, labelInfos := l.compileLabels()
	openai := l.compileOpenAIGateway(catalog)
	decisionLog := l.compileDecisionLog()
	notify := l.compileApprovals()
	if len(l.errs) > 0 {
		return nil, l.errs.Normalize(opts.MaxErrors)
	}
	pipeline, err := engine.New(hooks, engine.WithCatalog(catalog), engine.WithPlanLimits(l.settings.planLimits), engine.WithLogger(opts.Logger),
		engine.WithTracerProvider(opts.TracerProvider), engine.WithSpanPayloads(opts.SpanPayloads), engine.WithMeterProvider(opts.MeterProvider))
	if err != nil {
		return nil, diag.List{{Kind: diag.KindRequiredHook, Message: err.Error()}}
	}
	id, files := cf.generationID()
	return &Generation{
		Generation: engine.Generation{
			ID: id, Pipeline: pipeline, Runner: runner, PolicyRevision: revision,
			Binding: cmp.Or(l.settings.binding, engine.DefaultBinding), MaxRequestAge: l.settings.maxRequestAge,
			ApprovalTTL: l.settings.approvalTTL, Labels: labels,
		},
		Digest: id, Dir: dir, Files: files, Catalog: catalog, Policies: l.rego, Queries: slices.Compact(slices.Sorted(slices.Values(l.queries))),
		Reads: l.reads, DataMounts: l.mounts, Hooks: infos, Guards: guards, LabelRules: labelInfos, Observers: l.observers,
		Gateways: Gateways{MCP: mcp, OpenAI: openai}, DecisionLog: decisionLog, ApprovalNotify: notify, AllowBoundaryRemoval: l.settings.allowBoundaryRemoval, LoadedAt: time.Now().UTC(),
	}, nil
}

func (l *loader) compilePolicies(cf configFiles) {
	data, errs := decodeData(cf.data)
	l.errs = append(l.errs, errs...)
	for _, d := range data {
		l.mounts = append(l.mounts, DataMount{File: d.File, Path: strings.Join(append([]string{"data"}, d.Path...), ".")})
	}
	modules := make([]policy.Module, len(cf.policies))
	for i, f := range cf.policies {
		modules[i] = policy.Module{File: f.name, Source: f.data}
	}
	bundle, err := policy.Compile(modules, data, policy.Options{Timeout: l.settings.regoTimeout})
	if err == nil && len(errs) == 0 {
		l.rego = bundle
		return
	}
	l.regoFailed = true
	if list, ok := diag.AsList(err); ok {
		l.errs = append(l.errs, list...)
	} else if err != nil {
		l.errs = append(l.errs, &diag.Error{Kind: diag.KindRegoCompile, Message: err.Error()})
	}
}

// context returns the action compile context of one hook.
func (l *loader) context(d document, stage engine.Stage, hook string) *builtin.Context {
	return &builtin.Context{
		Stage: stage, Hook: hook, CEL: l.cel, Rego: l.rego, RegoFailed: l.regoFailed,
		Services: l.opts.Services, Source: d.src, Errors: &l.errs, Queries: &l.queries, Reads: l.reads,
	}
}
