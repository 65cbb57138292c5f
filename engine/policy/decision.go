package policy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentd-dev/agentd/engine"
	"github.com/open-policy-agent/opa/v1/ast"
)

// DeniedCode is the code given to a deny entry that is a bare string.
const DeniedCode = "denied"

// Violation is one reason a plan was rejected.
type Violation = engine.Violation

// PlanDecision is a decoded after-planning decision document {deny, plan?,
// require_approval?}. Deny is sorted by step_id, code and message. Plan is the
// policy's replacement plan, or nil. RequireApproval lists the steps whose checks need
// an approval when the plan is accepted (docs/semantics.md §8.20), sorted by step_id.
type PlanDecision struct {
	Deny            []Violation
	Plan            *engine.RoutingPlan
	RequireApproval []ApprovalStep
}

// ApprovalStep is one entry of a plan decision's require_approval: the step whose
// tool call needs an approval, and the code and reason the approval carries.
type ApprovalStep struct {
	StepID string `json:"step_id"`
	Code   string `json:"code"`
	Reason string `json:"reason,omitempty"`
}

// Allowed reports whether the decision lets the plan run: nothing was denied.
func (d PlanDecision) Allowed() bool { return len(d.Deny) == 0 }

// Denial is one reason an operation call was refused.
type Denial struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// GuardDecision is a decoded operation-guard decision document {deny}. Deny is sorted by
// code and reason.
type GuardDecision struct {
	Deny []Denial
}

// Allowed reports whether the decision lets the call run: nothing was denied.
func (d GuardDecision) Allowed() bool { return len(d.Deny) == 0 }

// PlanDecision evaluates the query and decodes an after-planning decision. deny must be a
// set or array whose entries are strings (code "denied") or objects with a string code
// and optional string step_id and message; plan, when present, must decode as a
// RoutingPlan. Errors are *EvalError: ErrUndefined for an undefined document, ErrShape
// for a wrong shape, ErrTimeout when the deadline passed, ErrCanceled when ctx ended
// first, ErrEval for any other evaluation error. Callers must treat every error as a
// denial.
func (q *Query) PlanDecision(ctx context.Context, input ast.Value) (PlanDecision, error) {
	doc, err := q.document(ctx, input)
	if err != nil {
		return PlanDecision{}, err
	}
	d, err := decodePlanDecision(doc)
	if err != nil {
		return PlanDecision{}, &EvalError{Query: q.query, Reason: ErrShape, Cause: err}
	}
	return d, nil
}

// GuardDecision evaluates the query and decodes an operation-guard decision: deny is a
// set or array of strings (code "denied") or objects with a string code and an optional
// string reason. Errors are as for PlanDecision.
func (q *Query) GuardDecision(ctx context.Context, input ast.Value) (GuardDecision, error) {
	doc, err := q.document(ctx, input)
	if err != nil {
		return GuardDecision{}, err
	}
	d, err := decodeGuardDecision(doc)
	if err != nil {
		return GuardDecision{}, &EvalError{Query: q.query, Reason: ErrShape, Cause: err}
	}
	return d, nil
}

// document evaluates the query and returns its document as an object.
func (q *Query) document(ctx context.Context, input ast.Value) (map[string]any, error) {
	v, defined, err := q.eval(ctx, input)
	if err != nil {
		return nil, err
	}
	if !defined {
		return nil, &EvalError{Query: q.query, Reason: ErrUndefined}
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, &EvalError{Query: q.query, Reason: ErrShape, Cause: fmt.Errorf("document is %s, not an object", jsonKind(v))}
	}
	return doc, nil
}

// decisionMembers are the members of a decision document that decodePlanDecision and
// decodeGuardDecision read. A query naming a package evaluates only these.
var decisionMembers = []string{"deny", "plan", "require_approval"}

func decodePlanDecision(doc map[string]any) (PlanDecision, error) {
	entries, err := denyEntries(doc)
	if err != nil {
		return PlanDecision{}, err
	}
	var d PlanDecision
	for i, e := range entries {
		v, err := decodeViolation(e)
		if err != nil {
			return PlanDecision{}, fmt.Errorf("deny entry %d: %w", i, err)
		}
		d.Deny = append(d.Deny, v)
	}
	slices.SortFunc(d.Deny, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.StepID, b.StepID), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Message, b.Message))
	})
	if raw, ok := doc["plan"]; ok {
		if d.Plan, err = decodePlan(raw); err != nil {
			return PlanDecision{}, err
		}
	}
	if raw, ok := doc["require_approval"]; ok {
		if d.RequireApproval, err = decodeApprovalSteps(raw); err != nil {
			return PlanDecision{}, err
		}
	}
	return d, nil
}

// decodeApprovalSteps decodes require_approval: a set or array of objects with a
// string step_id and code and an optional string reason.
func decodeApprovalSteps(raw any) ([]ApprovalStep, error) {
	entries, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("require_approval is %s, not a set or array", jsonKind(raw))
	}
	out := make([]ApprovalStep, 0, len(entries))
	for i, e := range entries {
		if _, ok := e.(map[string]any); !ok {
			return nil, fmt.Errorf("require_approval entry %d is %s, not an object", i, jsonKind(e))
		}
		code, fields, err := denyEntry(e, "step_id", "reason")
		switch {
		case err != nil:
		case fields[0] == "":
			err = errors.New("step_id must be a non-empty string")
		case code == "":
			err = errors.New("code must be a non-empty string")
		}
		if err != nil {
			return nil, fmt.Errorf("require_approval entry %d: %w", i, err)
		}
		out = append(out, ApprovalStep{StepID: fields[0], Code: code, Reason: fields[1]})
	}
	slices.SortFunc(out, func(a, b ApprovalStep) int {
		return cmp.Or(cmp.Compare(a.StepID, b.StepID), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Reason, b.Reason))
	})
	return out, nil
}

func decodeGuardDecision(doc map[string]any) (GuardDecision, error) {
	entries, err := denyEntries(doc)
	if err != nil {
		return GuardDecision{}, err
	}
	var d GuardDecision
	for i, e := range entries {
		code, fields, err := denyEntry(e, "reason")
		if err != nil {
			return GuardDecision{}, fmt.Errorf("deny entry %d: %w", i, err)
		}
		d.Deny = append(d.Deny, Denial{Code: code, Reason: fields[0]})
	}
	slices.SortFunc(d.Deny, func(a, b Denial) int {
		return cmp.Or(cmp.Compare(a.Code, b.Code), cmp.Compare(a.Reason, b.Reason))
	})
	return d, nil
}

// denyEntries returns the document's deny collection. Sets arrive as arrays.
func denyEntries(doc map[string]any) ([]any, error) {
	raw, ok := doc["deny"]
	if !ok {
		return nil, errors.New("document has no deny")
	}
	entries, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("deny is %s, not a set or array", jsonKind(raw))
	}
	return entries, nil
}

func decodeViolation(e any) (Violation, error) {
	code, fields, err := denyEntry(e, "step_id", "message")
	if err != nil {
		return Violation{}, err
	}
	return Violation{Code: code, StepID: fields[0], Message: fields[1]}, nil
}

// denyEntry decodes a deny entry: a string s is code "denied" with s as the last
// optional field; an object needs a string code, and each optional field, when present,
// must be a string.
func denyEntry(e any, optional ...string) (string, []string, error) {
	fields := make([]string, len(optional))
	switch x := e.(type) {
	case string:
		fields[len(fields)-1] = x
		return DeniedCode, fields, nil
	case map[string]any:
		code, ok := x["code"].(string)
		if !ok {
			return "", nil, errors.New("code must be a string")
		}
		for i, name := range optional {
			raw, present := x[name]
			if !present {
				continue
			}
			s, ok := raw.(string)
			if !ok {
				return "", nil, fmt.Errorf("%s must be a string, not %s", name, jsonKind(raw))
			}
			fields[i] = s
		}
		return code, fields, nil
	default:
		return "", nil, fmt.Errorf("entry is %s, not a string or object", jsonKind(e))
	}
}

// decodePlan decodes the decision's replacement plan through its JSON form, so the
// RoutingPlan's json tags and time parsing apply.
func decodePlan(raw any) (*engine.RoutingPlan, error) {
	if _, ok := raw.(map[string]any); !ok {
		return nil, fmt.Errorf("plan is %s, not an object", jsonKind(raw))
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	var p engine.RoutingPlan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return &p, nil
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number, float64, int:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
