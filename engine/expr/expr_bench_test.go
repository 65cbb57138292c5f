package expr

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

const (
	benchWhenHasTenant = "has(metadata.tenant)"
	benchPlanExists    = "plan.steps.exists(s, s.metadata.capability == 'execute_trade')"
)

var benchMetadata = map[string]any{"tenant": "acme", "user": "u-1", "tags": []any{"gold", "eu"}}

func benchPlan() map[string]any {
	b, err := json.Marshal(samplePlan())
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}

// rawProgram compiles src with plain cel-go: the same variables, no extensions.
func rawProgram(b *testing.B, src string, opts ...cel.ProgramOption) cel.Program {
	env, err := cel.NewEnv(
		cel.Variable("request", cel.StringType),
		cel.Variable("metadata", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("plan", cel.DynType),
	)
	if err != nil {
		b.Fatal(err)
	}
	checked, iss := env.Compile(src)
	if iss.Err() != nil {
		b.Fatal(iss.Err())
	}
	prg, err := env.Program(checked, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return prg
}

func benchRaw(b *testing.B, prg cel.Program, activation func() map[string]any) {
	b.ReportAllocs()
	for b.Loop() {
		out, _, err := prg.Eval(activation())
		if err != nil || out != types.True {
			b.Fatal(out, err)
		}
	}
}

func benchProgram(b *testing.B, p *Program, vars func() *Vars) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ok, err := p.EvalBool(ctx, vars())
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkProgram_WhenHasTenant(b *testing.B) {
	p := mustCompile(b, newCompiler(b, 0), BeforePlanning, benchWhenHasTenant, Bool)
	vars := &Vars{Request: "buy 10 ACME", Metadata: benchMetadata}
	benchProgram(b, p, func() *Vars { return vars })
}

func BenchmarkRawCEL_WhenHasTenant(b *testing.B) {
	activation := map[string]any{"request": "buy 10 ACME", "metadata": benchMetadata}
	b.Run("plain", func(b *testing.B) {
		benchRaw(b, rawProgram(b, benchWhenHasTenant), func() map[string]any { return activation })
	})
	b.Run("cost_limit", func(b *testing.B) {
		benchRaw(b, rawProgram(b, benchWhenHasTenant, cel.CostLimit(DefaultCostLimit)),
			func() map[string]any { return activation })
	})
}

// BenchmarkProgram_PlanStepsExists evaluates a plan expression with the plan conversion
// cached in the Vars (several expressions over one plan) and redone on every evaluation.
func BenchmarkProgram_PlanStepsExists(b *testing.B) {
	p := mustCompile(b, newCompiler(b, 0), AfterPlanning, benchPlanExists, Bool)
	vars := &Vars{Request: "buy 10 ACME", Metadata: benchMetadata, Plan: samplePlan()}
	b.Run("cached", func(b *testing.B) {
		benchProgram(b, p, func() *Vars { return vars })
	})
	b.Run("converted", func(b *testing.B) {
		benchProgram(b, p, func() *Vars { vars.Reset(); return vars })
	})
}

// BenchmarkRawCEL_PlanStepsExists evaluates the same expression over a JSON-shaped plan
// map built once, and over one built by a JSON round trip for every evaluation.
func BenchmarkRawCEL_PlanStepsExists(b *testing.B) {
	plan := benchPlan()
	b.Run("plain", func(b *testing.B) {
		activation := map[string]any{"request": "buy 10 ACME", "metadata": benchMetadata, "plan": plan}
		benchRaw(b, rawProgram(b, benchPlanExists), func() map[string]any { return activation })
	})
	b.Run("cost_limit", func(b *testing.B) {
		activation := map[string]any{"request": "buy 10 ACME", "metadata": benchMetadata, "plan": plan}
		benchRaw(b, rawProgram(b, benchPlanExists, cel.CostLimit(DefaultCostLimit)),
			func() map[string]any { return activation })
	})
	b.Run("json_per_eval", func(b *testing.B) {
		benchRaw(b, rawProgram(b, benchPlanExists), func() map[string]any {
			return map[string]any{"request": "buy 10 ACME", "metadata": benchMetadata, "plan": benchPlan()}
		})
	})
}
