package engine_test

import (
	"context"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// Each stage benchmark is paired with a baseline that calls the same hook methods
// directly, with the same per-iteration setup, so the ratio is the runner's overhead:
// records, spans (no-op provider), enrichment diffs, plan copies and validation.

// enrichOne sets one enrichment and carries on.
type enrichOne struct{ name, key string }

func (h *enrichOne) Name() string { return h.name }
func (h *enrichOne) BeforePlanning(_ context.Context, pctx *engine.PipelineContext) (*engine.ShortCircuit, error) {
	pctx.Enrichments[h.key] = "value of " + h.key
	return nil, nil
}

// passPlan returns the plan it is given.
type passPlan struct{ name string }

func (h *passPlan) Name() string { return h.name }
func (h *passPlan) AfterPlanning(_ context.Context, _ *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
	return plan, nil
}

type passRequired struct{ passPlan }

func (*passRequired) RequireAfterPlanningSuccess() {}

var (
	benchTrailSink *engine.Trail
	benchPlanSink  *engine.RoutingPlan
)

func fiveEnrichers() []engine.Hook {
	hooks := make([]engine.Hook, 5)
	for i, key := range []string{"rag_context", "conversation_history", "activity_coordination", "user_profile", "tenant"} {
		hooks[i] = &enrichOne{name: "enrich-" + key, key: key}
	}
	return hooks
}

// recordingModes runs fn as sub-benchmarks recording=off (nil trail) and recording=on
// (a fresh trail per iteration).
func recordingModes(b *testing.B, fn func(b *testing.B, newTrail func() *engine.Trail)) {
	b.Run("recording=off", func(b *testing.B) { fn(b, func() *engine.Trail { return nil }) })
	b.Run("recording=on", func(b *testing.B) { fn(b, engine.NewTrail) })
}

func BenchmarkBeforePlanning_FiveTrivialHooks(b *testing.B) {
	p := mustNew(b, fiveEnrichers())
	ctx, gate := context.Background(), engine.NewGate(map[string]string{"locale": "en"}, false)
	recordingModes(b, func(b *testing.B, newTrail func() *engine.Trail) {
		b.ReportAllocs()
		for b.Loop() {
			trail := newTrail()
			pctx := &engine.PipelineContext{Request: "q", Enrichments: make(map[string]any, 8)}
			if _, err := p.BeforePlanning(ctx, pctx, gate, trail); err != nil {
				b.Fatal(err)
			}
			benchTrailSink = trail
		}
	})
}

func BenchmarkBaseline_BeforePlanningFiveHooks(b *testing.B) {
	hooks := fiveEnrichers()
	ctx := context.Background()
	recordingModes(b, func(b *testing.B, newTrail func() *engine.Trail) {
		b.ReportAllocs()
		for b.Loop() {
			trail := newTrail()
			pctx := &engine.PipelineContext{Request: "q", Enrichments: make(map[string]any, 8)}
			for _, h := range hooks {
				if _, err := h.(engine.BeforePlanningHook).BeforePlanning(ctx, pctx); err != nil {
					b.Fatal(err)
				}
			}
			benchTrailSink = trail
		}
	})
}

func twoOptionalOneRequired() []engine.Hook {
	return []engine.Hook{&passPlan{name: "first"}, &passPlan{name: "second"}, &passRequired{passPlan{name: "governed"}}}
}

func BenchmarkAfterPlanning_ThreeSteps_TwoOptionalOneRequired(b *testing.B) {
	catalog := testCatalog(b)
	p := mustNew(b, twoOptionalOneRequired(), engine.WithCatalog(catalog))
	plan, pctx, ctx := threeStepPlan(), newPctx(), context.Background()
	if err := engine.ValidatePlan(plan, catalog, nil); err != nil {
		b.Fatal(err)
	}
	recordingModes(b, func(b *testing.B, newTrail func() *engine.Trail) {
		b.ReportAllocs()
		for b.Loop() {
			trail := newTrail()
			got, err := p.AfterPlanning(ctx, pctx, plan, nil, trail)
			if err != nil {
				b.Fatal(err)
			}
			benchPlanSink, benchTrailSink = got, trail
		}
	})
}

// readerPlan is passPlan declaring itself an engine.PlanReader, as declarative hooks
// without plan.* steps do: no defensive copy, no revalidation of an unchanged plan.
type readerPlan struct{ passPlan }

func (readerPlan) ReadsPlanOnly() bool { return true }

type readerRequired struct{ readerPlan }

func (readerRequired) RequireAfterPlanningSuccess() {}

func BenchmarkAfterPlanning_ThreeSteps_PlanReaders(b *testing.B) {
	hooks := []engine.Hook{&readerPlan{passPlan{name: "first"}}, &readerPlan{passPlan{name: "second"}}, &readerRequired{readerPlan{passPlan{name: "governed"}}}}
	p := mustNew(b, hooks, engine.WithCatalog(testCatalog(b)))
	plan, pctx, ctx := threeStepPlan(), newPctx(), context.Background()
	recordingModes(b, func(b *testing.B, newTrail func() *engine.Trail) {
		b.ReportAllocs()
		for b.Loop() {
			trail := newTrail()
			got, err := p.AfterPlanning(ctx, pctx, plan, nil, trail)
			if err != nil {
				b.Fatal(err)
			}
			benchPlanSink, benchTrailSink = got, trail
		}
	})
}

func BenchmarkBaseline_AfterPlanningTwoOptionalOneRequired(b *testing.B) {
	hooks := twoOptionalOneRequired()
	plan, pctx, ctx := threeStepPlan(), newPctx(), context.Background()
	recordingModes(b, func(b *testing.B, newTrail func() *engine.Trail) {
		b.ReportAllocs()
		for b.Loop() {
			trail := newTrail()
			current := plan
			for _, h := range hooks {
				next, err := h.(engine.AfterPlanningHook).AfterPlanning(ctx, pctx, current)
				if err != nil {
					b.Fatal(err)
				}
				current = next
			}
			benchPlanSink, benchTrailSink = current, trail
		}
	})
}

// BenchmarkAfterPlanning_CostBreakdown measures the two per-hook costs of the stage
// on the same plan: the deep copy each hook receives and the revalidation of its result.
func BenchmarkAfterPlanning_CostBreakdown(b *testing.B) {
	plan, catalog := threeStepPlan(), testCatalog(b)
	b.Run("clone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := engine.ClonePlan(plan)
			if err != nil {
				b.Fatal(err)
			}
			benchPlanSink = c
		}
	})
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := engine.ValidatePlan(plan, catalog, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
