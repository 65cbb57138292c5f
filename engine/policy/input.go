package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

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
	case nil, bool, string, int, int64, json.Number:
		return ast.InterfaceToValue(x)
	}
	if rv := reflect.ValueOf(v); nilable(rv.Kind()) && rv.IsNil() {
		return ast.NullValue, nil // as encoding/json renders a nil pointer, map or slice
	}
	return ast.InterfaceToValue(v)
}

func nilable(k reflect.Kind) bool {
	return k == reflect.Pointer || k == reflect.Map || k == reflect.Slice
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

// mapTerm converts a JSON-shaped value (typically a map), rendering nil maps as null.
func mapTerm(m any) (*ast.Term, error) {
	v, err := valueOf(m)
	if err != nil {
		return nil, err
	}
	return ast.NewTerm(v), nil
}

var (
	errYearRange = errors.New("created_at: year outside of range [0,9999]")
	errZoneRange = errors.New("created_at: timezone hour outside of range [0,23]")
)

// timeString renders t as time.Time.MarshalJSON does, without the quotes, and fails
// where it fails.
func timeString(t time.Time) (string, error) {
	if err := checkTime(t); err != nil {
		return "", err
	}
	return t.Format(time.RFC3339Nano), nil
}

// checkTime fails where time.Time.MarshalJSON fails.
func checkTime(t time.Time) error {
	if y := t.Year(); y < 0 || y > 9999 {
		return errYearRange
	}
	if _, off := t.Zone(); off <= -24*60*60 || off >= 24*60*60 {
		return errZoneRange
	}
	return nil
}

// checkValue fails where valueOf fails, converting only the values it cannot check
// directly (anything but nil, booleans, strings, finite float64s, []any and
// map[string]any).
func checkValue(x any) error {
	switch v := x.(type) {
	case nil, bool, string:
		return nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("unsupported number %v", v)
		}
		return nil
	case []any:
		for _, e := range v {
			if err := checkValue(e); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		for _, e := range v {
			if err := checkValue(e); err != nil {
				return err
			}
		}
		return nil
	}
	_, err := valueOf(x)
	return err
}
