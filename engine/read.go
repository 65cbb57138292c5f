package engine

import "github.com/agentd-dev/agentd/engine/jsonread"

// planFields and stepFields are the JSON names ReadPlan reads, in its order.
var (
	planFields = jsonread.Fields[RoutingPlan]([]string{"plan_id", "original_request", "mode", "steps", "created_at", "terminal",
		"continuation_note", "phase_number"}, "needs_user_input")
	stepFields = jsonread.Fields[RoutingStep]([]string{"step_id", "agent_name", "namespace", "instruction", "depends_on",
		"implicit_deps", "metadata"})
)

// ReadPlan reads a RoutingPlan on jsonread's fast path: into dst, as encoding/json
// decodes one with DisallowUnknownFields, or false for a text outside the subset
// (needs_user_input among them), which the caller then decodes with encoding/json.
func ReadPlan(r *jsonread.Reader, dst **RoutingPlan) bool {
	p := new(RoutingPlan)
	*dst = p
	return r.Struct(planFields, func(i int) bool {
		switch i {
		case 0:
			return r.String(&p.PlanID)
		case 1:
			return r.String(&p.OriginalRequest)
		case 2:
			return r.String((*string)(&p.Mode))
		case 3:
			p.Steps = make([]RoutingStep, 0, 4) // most plans have a few steps
			return r.Array(func() bool {
				p.Steps = append(p.Steps, RoutingStep{})
				return readStep(r, &p.Steps[len(p.Steps)-1])
			})
		case 4:
			return r.Time(&p.CreatedAt)
		case 5:
			p.Terminal = new(bool)
			return r.Bool(p.Terminal)
		case 6:
			return r.String(&p.ContinuationNote)
		default:
			return r.Int(&p.PhaseNumber)
		}
	})
}

// readStep reads one step of a plan into s, which is zero.
func readStep(r *jsonread.Reader, s *RoutingStep) bool {
	return r.Struct(stepFields, func(i int) bool {
		switch i {
		case 0:
			return r.String(&s.StepID)
		case 1:
			return r.String(&s.AgentName)
		case 2:
			return r.String(&s.Namespace)
		case 3:
			return r.String(&s.Instruction)
		case 4:
			return r.Strings(&s.DependsOn)
		case 5:
			return r.Strings(&s.ImplicitDeps)
		default:
			return r.Map(&s.Metadata)
		}
	})
}
