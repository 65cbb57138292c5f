package policy

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/open-policy-agent/opa/v1/ast"
)

// InputValue converts a JSON-shaped Go value (nil, bool, string, numbers, json.Number,
// []any, map[string]any, ...) to a Rego value. It follows encoding/json: nil slices and
// maps become null, other types go through a JSON round trip so their json tags apply,
// and non-finite floats are an error.
func InputValue(v any) (ast.Value, error) {
	return valueOf(v)
}

func valueOf(v any) (ast.Value, error) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("unsupported number %v", x)
		}
		return ast.InterfaceToValue(x)
	case []any:
		if x == nil {
			return ast.NullValue, nil
		}
		terms := make([]*ast.Term, len(x))
		for i, e := range x {
			ev, err := valueOf(e)
			if err != nil {
				return nil, err
			}
			terms[i] = ast.NewTerm(ev)
		}
		return ast.NewArray(terms...), nil
	case map[string]any:
		if x == nil {
			return ast.NullValue, nil
		}
		items := make([][2]*ast.Term, 0, len(x))
		for k, e := range x {
			ev, err := valueOf(e)
			if err != nil {
				return nil, err
			}
			items = append(items, ast.Item(ast.InternedTerm(k), ast.NewTerm(ev)))
		}
		return ast.NewObject(items...), nil
	case []string:
		if x == nil {
			return ast.NullValue, nil
		}
	case map[string]string:
		if x == nil {
			return ast.NullValue, nil
		}
	}
	return ast.InterfaceToValue(v)
}

// Object keys, built once and shared by every input: Rego never mutates terms.
var (
	keyPlan        = ast.StringTerm("plan")
	keyPhase       = ast.StringTerm("phase")
	keyRequest     = ast.StringTerm("request")
	keyMetadata    = ast.StringTerm("metadata")
	keyEnrichments = ast.StringTerm("enrichments")
	keyCall        = ast.StringTerm("call")

	keyPlanID           = ast.StringTerm("plan_id")
	keyOriginalRequest  = ast.StringTerm("original_request")
	keyMode             = ast.StringTerm("mode")
	keySteps            = ast.StringTerm("steps")
	keyCreatedAt        = ast.StringTerm("created_at")
	keyTerminal         = ast.StringTerm("terminal")
	keyContinuationNote = ast.StringTerm("continuation_note")
	keyPhaseNumber      = ast.StringTerm("phase_number")
	keyNeedsUserInput   = ast.StringTerm("needs_user_input")
	keyQuestion         = ast.StringTerm("question")
	keyMissingFields    = ast.StringTerm("missing_fields")
	keyPartialProgress  = ast.StringTerm("partial_progress")

	keyStepID       = ast.StringTerm("step_id")
	keyAgentName    = ast.StringTerm("agent_name")
	keyNamespace    = ast.StringTerm("namespace")
	keyInstruction  = ast.StringTerm("instruction")
	keyDependsOn    = ast.StringTerm("depends_on")
	keyImplicitDeps = ast.StringTerm("implicit_deps")
)

// PlanInput builds the after-planning input {plan, phase, request, metadata,
// enrichments}. The plan is rendered exactly as encoding/json would render it (field
// names, omitempty, nil slices and maps as null, CreatedAt as an RFC 3339 string), so
// the result equals InputValue of the JSON round trip, but is built without one.
func PlanInput(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any) (ast.Value, error) {
	p, err := planValue(plan)
	if err != nil {
		return nil, fmt.Errorf("policy: plan input: %w", err)
	}
	md, err := mapTerm(metadata)
	if err != nil {
		return nil, fmt.Errorf("policy: plan input: metadata: %w", err)
	}
	en, err := mapTerm(enrichments)
	if err != nil {
		return nil, fmt.Errorf("policy: plan input: enrichments: %w", err)
	}
	return ast.NewObject(
		ast.Item(keyPlan, p),
		ast.Item(keyPhase, ast.InternedTerm(phase)),
		ast.Item(keyRequest, ast.StringTerm(request)),
		ast.Item(keyMetadata, md),
		ast.Item(keyEnrichments, en),
	), nil
}

// CallInput builds the operation-guard input {call, request, metadata, enrichments}.
// Nil maps become null, as encoding/json renders them.
func CallInput(call map[string]any, request string, metadata, enrichments map[string]any) (ast.Value, error) {
	c, err := mapTerm(call)
	if err != nil {
		return nil, fmt.Errorf("policy: call input: call: %w", err)
	}
	md, err := mapTerm(metadata)
	if err != nil {
		return nil, fmt.Errorf("policy: call input: metadata: %w", err)
	}
	en, err := mapTerm(enrichments)
	if err != nil {
		return nil, fmt.Errorf("policy: call input: enrichments: %w", err)
	}
	return ast.NewObject(
		ast.Item(keyCall, c),
		ast.Item(keyRequest, ast.StringTerm(request)),
		ast.Item(keyMetadata, md),
		ast.Item(keyEnrichments, en),
	), nil
}

// mapTerm converts a map, rendering nil as null.
func mapTerm(m map[string]any) (*ast.Term, error) {
	v, err := valueOf(m)
	if err != nil {
		return nil, err
	}
	return ast.NewTerm(v), nil
}

// stringsTerm converts a string slice to an array.
func stringsTerm(ss []string) *ast.Term {
	terms := make([]*ast.Term, len(ss))
	for i, s := range ss {
		terms[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(terms...)
}

// objectBuilder collects object items; add* methods apply encoding/json's omitempty.
type objectBuilder struct{ items [][2]*ast.Term }

func (b *objectBuilder) add(key, v *ast.Term) {
	b.items = append(b.items, ast.Item(key, v))
}

func (b *objectBuilder) addString(key *ast.Term, s string, omitEmpty bool) {
	if !omitEmpty || s != "" {
		b.add(key, ast.StringTerm(s))
	}
}

func (b *objectBuilder) addStrings(key *ast.Term, ss []string) {
	if len(ss) > 0 {
		b.add(key, stringsTerm(ss))
	}
}

func (b *objectBuilder) term() *ast.Term { return ast.ObjectTerm(b.items...) }

func planValue(p *engine.RoutingPlan) (*ast.Term, error) {
	if p == nil {
		return ast.NullTerm(), nil
	}
	created, err := timeString(p.CreatedAt)
	if err != nil {
		return nil, err
	}
	steps := ast.NullTerm()
	if p.Steps != nil {
		terms := make([]*ast.Term, len(p.Steps))
		for i := range p.Steps {
			if terms[i], err = stepValue(&p.Steps[i]); err != nil {
				return nil, fmt.Errorf("steps[%d]: %w", i, err)
			}
		}
		steps = ast.ArrayTerm(terms...)
	}
	b := objectBuilder{items: make([][2]*ast.Term, 0, 9)}
	b.addString(keyPlanID, p.PlanID, false)
	b.addString(keyOriginalRequest, p.OriginalRequest, false)
	b.addString(keyMode, string(p.Mode), true)
	b.add(keySteps, steps)
	b.add(keyCreatedAt, ast.StringTerm(created))
	if p.Terminal != nil {
		b.add(keyTerminal, ast.InternedTerm(*p.Terminal))
	}
	b.addString(keyContinuationNote, p.ContinuationNote, true)
	if p.PhaseNumber != 0 {
		b.add(keyPhaseNumber, ast.InternedTerm(p.PhaseNumber))
	}
	if n := p.NeedsUserInput; n != nil {
		nb := objectBuilder{items: make([][2]*ast.Term, 0, 3)}
		nb.addString(keyQuestion, n.Question, false)
		nb.addStrings(keyMissingFields, n.MissingFields)
		nb.addString(keyPartialProgress, n.PartialProgress, true)
		b.add(keyNeedsUserInput, nb.term())
	}
	return b.term(), nil
}

func stepValue(s *engine.RoutingStep) (*ast.Term, error) {
	b := objectBuilder{items: make([][2]*ast.Term, 0, 7)}
	b.addString(keyStepID, s.StepID, false)
	b.addString(keyAgentName, s.AgentName, false)
	b.addString(keyNamespace, s.Namespace, false)
	b.addString(keyInstruction, s.Instruction, false)
	b.addStrings(keyDependsOn, s.DependsOn)
	b.addStrings(keyImplicitDeps, s.ImplicitDeps)
	if len(s.Metadata) > 0 {
		md, err := mapTerm(s.Metadata)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		b.add(keyMetadata, md)
	}
	return b.term(), nil
}

var (
	errYearRange = errors.New("created_at: year outside of range [0,9999]")
	errZoneRange = errors.New("created_at: timezone hour outside of range [0,23]")
)

// timeString renders t as time.Time.MarshalJSON does, without the quotes, and fails
// where it fails.
func timeString(t time.Time) (string, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return "", errYearRange
	}
	if _, off := t.Zone(); off <= -24*60*60 || off >= 24*60*60 {
		return "", errZoneRange
	}
	return t.Format(time.RFC3339Nano), nil
}
