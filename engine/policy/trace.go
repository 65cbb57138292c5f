package policy

import (
	"context"

	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// tracerKey is the context key of the tracer every evaluation under a context reports
// to.
type tracerKey struct{}

// tracerFor returns the OPA query tracer of one evaluation of a query, or nil.
type tracerFor func(q *Query) topdown.QueryTracer

// WithQueryTracer returns a context under which every evaluation of every Query reports
// its trace events to t (OPA's cover.Cover, for example), and to the tracers ctx
// already has. A traced evaluation is the evaluation itself: callers that memoize
// decisions must not answer from their memo under such a context (see Traced).
func WithQueryTracer(ctx context.Context, t topdown.QueryTracer) context.Context {
	return withTracer(ctx, func(*Query) topdown.QueryTracer { return t })
}

// withTracer installs f beside the tracer ctx already has.
func withTracer(ctx context.Context, f tracerFor) context.Context {
	if outer, ok := ctx.Value(tracerKey{}).(tracerFor); ok {
		inner := f
		f = func(q *Query) topdown.QueryTracer {
			a, b := outer(q), inner(q)
			switch {
			case a == nil:
				return b
			case b == nil:
				return a
			}
			return tracers{a, b}
		}
	}
	return context.WithValue(ctx, tracerKey{}, f)
}

// tracers sends every event to each of its tracers.
type tracers []topdown.QueryTracer

func (ts tracers) Enabled() bool { return true }

func (ts tracers) TraceEvent(e topdown.Event) {
	for _, t := range ts {
		t.TraceEvent(e)
	}
}

// Config plugs local variables when any tracer asks for them.
func (ts tracers) Config() topdown.TraceConfig {
	var c topdown.TraceConfig
	for _, t := range ts {
		c.PlugLocalVars = c.PlugLocalVars || t.Config().PlugLocalVars
	}
	return c
}

// Traced reports whether evaluations under ctx are traced (WithQueryTracer or
// Explainer.Context). A decision memo must then evaluate instead of answering.
func Traced(ctx context.Context) bool {
	_, ok := ctx.Value(tracerKey{}).(tracerFor)
	return ok
}

// evalOptions are the options of one evaluation of q with input under ctx: the input,
// the bundle's data cache, no metrics (nothing reads them) and the tracer ctx asks for.
func (q *Query) evalOptions(ctx context.Context, input rego.EvalOption) []rego.EvalOption {
	opts := []rego.EvalOption{input, rego.EvalBaseCache(q.cache), rego.EvalMetrics(metrics.NoOp())}
	if f, ok := ctx.Value(tracerKey{}).(tracerFor); ok {
		if t := f(q); t != nil {
			opts = append(opts, rego.EvalQueryTracer(t))
		}
	}
	return opts
}
