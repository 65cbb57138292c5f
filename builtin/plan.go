package builtin

import (
	"context"
	"fmt"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/expr"
)

var afterPlanning = []engine.Stage{engine.StageAfterPlanning}

func init() {
	register(&Spec{
		Name: "plan.remove_steps",
		Summary: "Removes the steps for which a CEL condition over `step` is true. The rewritten plan is revalidated; " +
			"removing a step that others depend on makes it invalid.",
		Stages:      afterPlanning,
		MutatesPlan: true,
		Params: []Param{
			{Name: "where", Type: celIn(expr.PlanStep, expr.Bool), Required: true, Doc: "condition over `step` (and the after_planning variables)"},
		},
		Compile: func(p *Params) Action {
			return &removeSteps{where: p.Expr("where")}
		},
	})
	register(&Spec{
		Name:        "plan.set_metadata",
		Summary:     "Sets `metadata.<key>` of every step matching `where` (all steps when absent) to a CEL value.",
		Stages:      afterPlanning,
		MutatesPlan: true,
		Params: []Param{
			{Name: "where", Type: celIn(expr.PlanStep, expr.Bool), Doc: "condition over `step`; default every step"},
			{Name: "key", Type: text(), Required: true, Doc: "metadata key to set"},
			{Name: "value", Type: celIn(expr.PlanStep, expr.Any), Required: true, Doc: "the value, may use `step`"},
		},
		Compile: func(p *Params) Action {
			return &setMetadata{where: p.Expr("where"), key: p.String("key"), value: p.Expr("value")}
		},
	})
}

type removeSteps struct{ where *expr.Program }

func (a *removeSteps) Run(ctx context.Context, s *State) error {
	vars := s.Vars()
	kept := make([]engine.RoutingStep, 0, len(s.Plan.Steps))
	for i := range s.Plan.Steps {
		vars.SetStep(&s.Plan.Steps[i])
		drop, err := a.where.EvalBool(ctx, vars)
		if err != nil {
			return fmt.Errorf("plan.remove_steps where: %w", err)
		}
		if !drop {
			kept = append(kept, s.Plan.Steps[i])
		}
	}
	vars.SetStep(nil)
	s.Plan.Steps = kept
	s.PlanChanged()
	return nil
}

type setMetadata struct {
	where, value *expr.Program
	key          string
}

func (a *setMetadata) Run(ctx context.Context, s *State) error {
	vars := s.Vars()
	for i := range s.Plan.Steps {
		step := &s.Plan.Steps[i]
		vars.Step = step
		vars.Reset()
		if a.where != nil {
			ok, err := a.where.EvalBool(ctx, vars)
			if err != nil {
				return fmt.Errorf("plan.set_metadata where: %w", err)
			}
			if !ok {
				continue
			}
		}
		v, err := a.value.Eval(ctx, vars)
		if err != nil {
			return fmt.Errorf("plan.set_metadata value: %w", err)
		}
		if step.Metadata == nil {
			step.Metadata = map[string]any{}
		}
		step.Metadata[a.key] = v
	}
	vars.Step = nil
	s.PlanChanged()
	return nil
}
