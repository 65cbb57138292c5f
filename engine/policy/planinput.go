package policy

import (
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/open-policy-agent/opa/v1/ast"
)

// The plan-review input is described once, as members: PlanInput converts them to a
// Rego value, and PlanMemo.PlanKey projects them without converting what the policy
// does not read. Both therefore see the same members, present under the same
// encoding/json rules (omitempty, nil as null).

// member is one member of an input object: its key and its value before conversion.
type member struct {
	key *ast.Term
	val typed
}

type typedKind uint8

const (
	kindNull typedKind = iota
	kindString
	kindStrings
	kindInt
	kindTime // a time.Time as encoding/json renders it
	kindBool
	kindAny // a JSON-shaped Go value, converted by valueOf
	kindPlan
	kindSteps
	kindNeeds
)

// typed is an input value before conversion; kind says which field holds it.
type typed struct {
	kind  typedKind
	s     string
	ss    []string
	n     int
	b     bool
	time  time.Time
	any   any
	plan  *engine.RoutingPlan
	steps []engine.RoutingStep
	needs *engine.NeedsUserInput
}

func str(s string) typed { return typed{kind: kindString, s: s} }

// rootMembers are the members of the plan-review input {plan, phase, request,
// metadata, enrichments}.
func rootMembers(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any, out *[5]member) []member {
	out[0] = member{keyPlan, typed{kind: kindPlan, plan: plan}}
	out[1] = member{keyPhase, typed{kind: kindInt, n: phase}}
	out[2] = member{keyRequest, str(request)}
	out[3] = member{keyMetadata, typed{kind: kindAny, any: metadata}}
	out[4] = member{keyEnrichments, typed{kind: kindAny, any: enrichments}}
	return out[:]
}

// planMembers are the members encoding/json renders for p.
func planMembers(p *engine.RoutingPlan, out *[9]member) []member {
	ms := out[:0]
	ms = append(ms, member{keyPlanID, str(p.PlanID)}, member{keyOriginalRequest, str(p.OriginalRequest)})
	if p.Mode != "" {
		ms = append(ms, member{keyMode, str(string(p.Mode))})
	}
	steps := typed{kind: kindSteps, steps: p.Steps}
	if p.Steps == nil {
		steps = typed{}
	}
	ms = append(ms, member{keySteps, steps}, member{keyCreatedAt, typed{kind: kindTime, time: p.CreatedAt}})
	if p.Terminal != nil {
		ms = append(ms, member{keyTerminal, typed{kind: kindBool, b: *p.Terminal}})
	}
	if p.ContinuationNote != "" {
		ms = append(ms, member{keyContinuationNote, str(p.ContinuationNote)})
	}
	if p.PhaseNumber != 0 {
		ms = append(ms, member{keyPhaseNumber, typed{kind: kindInt, n: p.PhaseNumber}})
	}
	if p.NeedsUserInput != nil {
		ms = append(ms, member{keyNeedsUserInput, typed{kind: kindNeeds, needs: p.NeedsUserInput}})
	}
	return ms
}

func stepMembers(s *engine.RoutingStep, out *[7]member) []member {
	ms := append(out[:0], member{keyStepID, str(s.StepID)}, member{keyAgentName, str(s.AgentName)},
		member{keyNamespace, str(s.Namespace)}, member{keyInstruction, str(s.Instruction)})
	if len(s.DependsOn) > 0 {
		ms = append(ms, member{keyDependsOn, typed{kind: kindStrings, ss: s.DependsOn}})
	}
	if len(s.ImplicitDeps) > 0 {
		ms = append(ms, member{keyImplicitDeps, typed{kind: kindStrings, ss: s.ImplicitDeps}})
	}
	if len(s.Metadata) > 0 {
		ms = append(ms, member{keyMetadata, typed{kind: kindAny, any: s.Metadata}})
	}
	return ms
}

func needsMembers(n *engine.NeedsUserInput, out *[3]member) []member {
	ms := append(out[:0], member{keyQuestion, str(n.Question)})
	if len(n.MissingFields) > 0 {
		ms = append(ms, member{keyMissingFields, typed{kind: kindStrings, ss: n.MissingFields}})
	}
	if n.PartialProgress != "" {
		ms = append(ms, member{keyPartialProgress, str(n.PartialProgress)})
	}
	return ms
}

// checkPlanInput fails where PlanInput fails, without building anything.
func checkPlanInput(plan *engine.RoutingPlan, metadata, enrichments map[string]any) error {
	if plan != nil {
		if err := checkTime(plan.CreatedAt); err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		for i := range plan.Steps {
			if err := checkValue(plan.Steps[i].Metadata); err != nil {
				return fmt.Errorf("plan: steps: [%d].metadata: %w", i, err)
			}
		}
	}
	if err := checkValue(metadata); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if err := checkValue(enrichments); err != nil {
		return fmt.Errorf("enrichments: %w", err)
	}
	return nil
}

// PlanInput builds the after-planning input {plan, phase, request, metadata,
// enrichments}. The plan is rendered exactly as encoding/json would render it (field
// names, omitempty, nil slices and maps as null, CreatedAt as an RFC 3339 string), so
// the result equals InputValue of the JSON round trip, but is built without one.
func PlanInput(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any) (ast.Value, error) {
	var root [5]member
	t, err := objectTerm(rootMembers(plan, phase, request, metadata, enrichments, &root))
	if err != nil {
		return nil, fmt.Errorf("policy: plan input: %w", err)
	}
	return t.Value, nil
}

func objectTerm(ms []member) (*ast.Term, error) {
	items := make([][2]*ast.Term, len(ms))
	for i, m := range ms {
		v, err := m.val.term()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.key.Value.(ast.String), err)
		}
		items[i] = ast.Item(m.key, v)
	}
	return ast.ObjectTerm(items...), nil
}

// term converts t to a Rego term.
func (t typed) term() (*ast.Term, error) {
	switch t.kind {
	case kindString:
		return ast.StringTerm(t.s), nil
	case kindStrings:
		terms := make([]*ast.Term, len(t.ss))
		for i, s := range t.ss {
			terms[i] = ast.StringTerm(s)
		}
		return ast.ArrayTerm(terms...), nil
	case kindInt:
		return ast.InternedTerm(t.n), nil
	case kindBool:
		return ast.InternedTerm(t.b), nil
	case kindAny:
		return mapTerm(t.any)
	case kindTime:
		s, err := timeString(t.time)
		if err != nil {
			return nil, err
		}
		return ast.StringTerm(s), nil
	case kindPlan:
		if t.plan == nil {
			return ast.NullTerm(), nil
		}
		var ms [9]member
		return objectTerm(planMembers(t.plan, &ms))
	case kindSteps:
		terms := make([]*ast.Term, len(t.steps))
		for i := range t.steps {
			var ms [7]member
			var err error
			if terms[i], err = objectTerm(stepMembers(&t.steps[i], &ms)); err != nil {
				return nil, fmt.Errorf("[%d].%w", i, err)
			}
		}
		return ast.ArrayTerm(terms...), nil
	case kindNeeds:
		var ms [3]member
		return objectTerm(needsMembers(t.needs, &ms))
	}
	return ast.NullTerm(), nil
}
