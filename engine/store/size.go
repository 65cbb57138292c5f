package store

import (
	"github.com/agentd-dev/agentd/engine"
)

// Sizes are estimates of what a value holds in memory, close to its JSON length: the
// bytes of its strings plus a small overhead per value. They bound the memory store;
// they need not be exact, only proportional and cheap (no encoding, no allocation).
const valueOverhead = 8

// sizeOf estimates a JSON-shaped value.
func sizeOf(v any) int64 {
	switch t := v.(type) {
	case string:
		return int64(len(t)) + valueOverhead
	case map[string]any:
		n := int64(valueOverhead)
		for k, e := range t {
			n += int64(len(k)) + sizeOf(e)
		}
		return n
	case []any:
		n := int64(valueOverhead)
		for _, e := range t {
			n += sizeOf(e)
		}
		return n
	case []string:
		n := int64(valueOverhead)
		for _, s := range t {
			n += int64(len(s)) + valueOverhead
		}
		return n
	case map[string]string:
		n := int64(valueOverhead)
		for k, s := range t {
			n += int64(len(k)+len(s)) + valueOverhead
		}
		return n
	case []byte:
		return int64(len(t)) + valueOverhead
	}
	return valueOverhead
}

func stepSize(s *engine.RoutingStep) int64 {
	return int64(len(s.StepID)+len(s.AgentName)+len(s.Namespace)+len(s.Instruction)) +
		sizeOf(s.DependsOn) + sizeOf(s.ImplicitDeps) + sizeOf(s.Metadata)
}

func planSize(p *engine.RoutingPlan) int64 {
	if p == nil {
		return valueOverhead
	}
	n := int64(len(p.PlanID)+len(p.OriginalRequest)+len(p.ContinuationNote)) + 64
	for i := range p.Steps {
		n += stepSize(&p.Steps[i])
	}
	return n
}

func resultsSize(rs []engine.StepResult) int64 {
	var n int64
	for i := range rs {
		r := &rs[i]
		n += int64(len(r.StepID)+len(r.AgentName)+len(r.Capability)+len(r.Namespace)+len(r.Error)+len(r.SkipReason)) + 64 +
			sizeOf(r.Parameters) + sizeOf(r.Response)
	}
	return n
}

// stateSize estimates a request state whose accepted steps (PriorSteps) are of size
// steps (see stepsSize).
func stateSize(st *engine.RequestState, steps int64) int64 {
	n := int64(len(st.ID)+len(st.Generation)+len(st.Request)+len(st.PhasePlanID)+len(st.PhaseHash)+len(st.HoldOf)) + 64 +
		sizeOf(st.Metadata) + sizeOf(st.Enrichments) + sizeOf(st.CacheVary) + sizeOf(st.Held) + steps
	for id, r := range st.Runs {
		n += runSize(id, r)
	}
	return n
}

// runSize estimates the run of step id.
func runSize(id string, r *engine.StepRun) int64 {
	if r == nil {
		return 0
	}
	n := int64(len(id)) + 32 + sizeOf(r.Response)
	for _, l := range r.Labels {
		n += int64(len(l)) + 16
	}
	return n
}

// recordSize estimates an execution record.
func recordSize(rec *engine.ExecutionRecord) int64 {
	n := int64(len(rec.RequestID)+len(rec.Generation)+len(rec.Error)+len(rec.FinalResponse)+len(rec.Request)) + 128 + sizeOf(rec.Metadata)
	for i := range rec.PipelineHooks {
		inv := &rec.PipelineHooks[i]
		n += int64(len(inv.HookName)+len(inv.Error)) + 96
		for _, e := range inv.Effects {
			n += int64(len(e.EffectID)+len(e.Name)+len(e.Summary)+len(e.Error)+len(e.Data)) + 64
		}
	}
	for i := range rec.Phases {
		n += planSize(rec.Phases[i].Plan) + resultsSize(rec.Phases[i].Results)
	}
	for i := range rec.Rejections {
		r := &rec.Rejections[i]
		n += int64(len(r.Hook)+len(r.Error)+len(r.StepID)) + 64 + planSize(r.Plan)
		for _, v := range r.Violations {
			n += int64(len(v.Code)+len(v.StepID)+len(v.Message)) + valueOverhead
		}
	}
	if rec.Result != nil {
		n += resultsSize(rec.Result.Steps)
	}
	for i := range rec.Operations {
		n += operationSize(&rec.Operations[i])
	}
	return n
}

// operationSize estimates one operation record of an execution record.
func operationSize(o *engine.OperationRecord) int64 {
	n := int64(len(o.StepID)+len(o.Namespace)+len(o.AgentName)+len(o.Capability)+len(o.Code)+len(o.Reason)+len(o.Guard)) + 128
	if o.Finish != nil {
		n += int64(len(o.Finish.Error)) + sizeOf(o.Finish.Response)
	}
	return n
}

// stepsSize estimates accepted steps. Accepted steps never change and states share
// them (engine.CloneState), so the size of steps that begin with the same array as
// sized, at least as long, is sized plus the size of the steps after it.
func stepsSize(steps []engine.RoutingStep, sized []engine.RoutingStep, size int64) int64 {
	from := 0
	if len(sized) > 0 && len(steps) >= len(sized) && &steps[0] == &sized[0] {
		from = len(sized)
	} else {
		size = 0
	}
	for i := range steps[from:] {
		size += stepSize(&steps[from+i])
	}
	return size
}
