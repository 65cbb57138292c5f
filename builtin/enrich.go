package builtin

import (
	"context"
	"fmt"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/expr"
)

var beforePlanning = []engine.Stage{engine.StageBeforePlanning}

func init() {
	register(&Spec{
		Name:    "enrich",
		Summary: "Writes a CEL value into an enrichment: replace it, append to it, or set it only when absent.",
		Stages:  beforePlanning,
		Params: []Param{
			{Name: "key", Type: text(), Required: true, Doc: "enrichment key, e.g. `rag_context`"},
			{Name: "value", Type: celExpr(expr.Any), Required: true, Doc: "the value"},
			{Name: "mode", Type: enum("set", "append", "set_if_absent"), Default: "set",
				Doc: "`set` replaces, `append` joins strings with `separator`, `set_if_absent` keeps a present value"},
			{Name: "separator", Type: text(), Default: "\n", Doc: "what `append` puts between the old and the new text"},
		},
		Compile: func(p *Params) Action {
			return &enrich{key: p.String("key"), value: p.Expr("value"), mode: p.Enum("mode"), separator: p.String("separator")}
		},
	})
	register(&Spec{
		Name:    "short_circuit",
		Summary: "Answers the request now (authoritative): planning, tools and synthesis are skipped.",
		Stages:  beforePlanning,
		Params: []Param{
			{Name: "response", Type: celExpr(expr.String), Required: true, Doc: "the answer"},
			{Name: "source", Type: text(), Default: "short_circuit", Doc: "the short circuit's recorded source"},
		},
		Compile: func(p *Params) Action {
			return &shortCircuit{response: p.Expr("response"), source: p.String("source")}
		},
	})
}

type enrich struct {
	key, mode, separator string
	value                *expr.Program
}

func (a *enrich) Run(ctx context.Context, s *State) error {
	v, err := a.value.Eval(ctx, s.Vars())
	if err != nil {
		return fmt.Errorf("enrich %s: %w", a.key, err)
	}
	current, present := s.Pctx.Enrichments[a.key]
	switch {
	case a.mode == "set_if_absent" && present:
		return nil
	case a.mode == "append" && present:
		prev := fmt.Sprint(current)
		if prev != "" {
			v = prev + a.separator + fmt.Sprint(v)
		}
	}
	s.Pctx.Enrichments[a.key] = v
	return nil
}

type shortCircuit struct {
	response *expr.Program
	source   string
}

func (a *shortCircuit) Run(ctx context.Context, s *State) error {
	text, err := a.response.EvalString(ctx, s.Vars())
	if err != nil {
		return fmt.Errorf("short_circuit response: %w", err)
	}
	s.Decision = &engine.ShortCircuitDecision{
		ShortCircuit: &engine.ShortCircuit{Response: text, Source: a.source},
		Kind:         engine.KindAuthoritative,
	}
	return nil
}
