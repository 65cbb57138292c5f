package expr

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"

	"github.com/agentd-dev/agentd/engine/diag"
)

// DefaultCostLimit is the cost limit used when Options.CostLimit is 0. Under the size
// bounds of the estimate, request.contains('x') costs about 6,600, request.lowerAscii()
// about 72,000 and a simple comprehension over MaxCollectionSize elements about 6,000;
// the default admits a dozen such steps but no nested comprehension over two inputs.
const DefaultCostLimit = 1_000_000

// interruptCheckFrequency is how many comprehension iterations run between checks of the
// evaluation context.
const interruptCheckFrequency = 100

// Options configures a Compiler.
type Options struct {
	// CostLimit bounds every expression twice: its estimated worst-case cost at compile
	// time (see MaxStringSize and MaxCollectionSize) and its actual cost at evaluation,
	// tracked when the inputs exceed the sizes the estimate assumed (within them the
	// estimate bounds it). 0 means DefaultCostLimit.
	CostLimit uint64
	// MaxIterations bounds the comprehension iterations of one evaluation: the sizes of
	// all lists and maps that comprehensions (all, exists, exists_one, map, filter)
	// range over, a nested comprehension counted every time it runs. cel-go's runtime
	// cost tracking takes time quadratic in the iterations of one comprehension, so the
	// cost limit alone lets an input far larger than the estimate assumed run for
	// seconds or minutes; this limit keeps the worst case in the tens of milliseconds.
	// Exceeding it is a cost_limit error. 0 means DefaultMaxIterations.
	MaxIterations int
}

// Compiler turns expression sources into Programs. It holds one CEL environment per scope,
// built once by NewCompiler; it is immutable and safe for concurrent use.
type Compiler struct {
	envs       map[Scope]*cel.Env
	limit      uint64
	iterations *iterationLimit
}

// NewCompiler builds the CEL environment of every scope.
func NewCompiler(opts Options) (*Compiler, error) {
	c := &Compiler{envs: make(map[Scope]*cel.Env, len(scopeTable)), limit: opts.CostLimit}
	if c.limit == 0 {
		c.limit = DefaultCostLimit
	}
	if opts.MaxIterations <= 0 {
		opts.MaxIterations = DefaultMaxIterations
	}
	c.iterations = newIterationLimit(opts.MaxIterations)
	for _, row := range scopeTable {
		envOpts := []cel.EnvOption{
			ext.Strings(), ext.Lists(ext.ListsMaxRangeSize(MaxCollectionSize)), ext.Sets(),
			ext.Math(), ext.Encoders(), cel.CrossTypeNumericComparisons(true),
		}
		for _, v := range append(commonVars[:len(commonVars):len(commonVars)], row.vars...) {
			envOpts = append(envOpts, cel.Variable(v.name, v.typ))
		}
		env, err := cel.NewEnv(envOpts...)
		if err != nil {
			return nil, fmt.Errorf("expr: build %s environment: %w", row.scope, err)
		}
		c.envs[row.scope] = env
	}
	return c, nil
}

// Compile parses, type-checks and cost-estimates src in scope and plans it for evaluation.
// want is the required output type. A problem with src is a *diag.Error positioned
// within src (1-based line, byte column): cel_syntax, cel_undeclared_variable (a variable
// of another scope, or of none), cel_type_check (including an output type other than
// want) or cel_cost_limit (estimated worst case over the limit). An unknown scope is a
// plain error.
func (c *Compiler) Compile(scope Scope, src string, want Kind) (*Program, error) {
	env, ok := c.envs[scope]
	if !ok {
		return nil, fmt.Errorf("expr: unknown scope %q", scope)
	}
	parsed, iss := env.Parse(src)
	if errs := iss.Errors(); len(errs) > 0 {
		first := firstIssue(errs)
		return nil, errorAt(src, diag.KindCELSyntax, first.Location, first.Message)
	}
	free := make(map[int64]string)
	freeIdents(parsed.NativeRep().Expr(), nil, free)
	if err := scopeError(src, scope, parsed.NativeRep(), free); err != nil {
		return nil, err
	}
	checked, iss := env.Check(parsed)
	if errs := iss.Errors(); len(errs) > 0 {
		first := firstIssue(errs)
		if name, ok := free[first.ExprID]; ok {
			return nil, errorAt(src, diag.KindCELUndeclaredVariable, first.Location,
				fmt.Sprintf("undeclared variable %q in %s", name, scope))
		}
		return nil, errorAt(src, diag.KindCELTypeCheck, first.Location, first.Message)
	}
	if err := checkOutput(checked.OutputType(), src, want); err != nil {
		return nil, err
	}
	est, err := env.EstimateCost(checked, sizeEstimator{})
	if err == nil && est.Max > c.limit {
		err = fmt.Errorf("estimated cost %d exceeds the limit %d (%s)", est.Max, c.limit, sizeAssumption)
	}
	if err != nil {
		return nil, wholeError(src, diag.KindCELCostLimit, err.Error())
	}
	opts := []cel.ProgramOption{
		cel.InterruptCheckFrequency(interruptCheckFrequency), cel.EvalOptions(cel.OptOptimize),
		cel.CustomDecoratorV2(c.iterations.decorator(rangeIDs(checked.NativeRep().Expr()))),
	}
	p := &Program{want: want, limit: c.limit, reads: readsOf(parsed.NativeRep().Expr(), free)}
	p.sizes = sizeChecks(p.reads)
	if p.prg, err = env.Program(checked, opts...); err != nil {
		return nil, wholeError(src, diag.KindCELTypeCheck, err.Error())
	}
	// Runtime cost tracking, which triples a typical evaluation's time, is only needed
	// when the cost depends on input sizes (an estimate with Min == Max is the cost,
	// within the limit) and the inputs may exceed the sizes the estimate assumed (see
	// Program.fits): the tracked program serves those evaluations.
	if est.Min != est.Max {
		if p.tracked, err = env.Program(checked, append(opts, cel.CostLimit(c.limit))...); err != nil {
			return nil, wholeError(src, diag.KindCELTypeCheck, err.Error())
		}
	}
	return p, nil
}

// checkOutput rejects an expression whose static type cannot be want. dyn is accepted for
// Bool and String; evaluation then checks the actual value.
func checkOutput(got *cel.Type, src string, want Kind) *diag.Error {
	var wantKind types.Kind
	switch want {
	case Bool:
		wantKind = types.BoolKind
	case String:
		wantKind = types.StringKind
	default:
		return nil
	}
	if got.Kind() == wantKind || got.Kind() == types.DynKind {
		return nil
	}
	return wholeError(src, diag.KindCELTypeCheck, fmt.Sprintf("expression returns %s, want %s", got, want))
}
