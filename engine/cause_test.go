package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// denied is a policy's refusal: it carries violations and declares its cause.
type denied struct{ violations []engine.Violation }

func (d denied) Error() string                      { return "denied" }
func (d denied) PlanViolations() []engine.Violation { return d.violations }
func (denied) DecisionCause() engine.Cause          { return engine.CausePolicyDenied }
func (broken) DecisionCause() engine.Cause          { return engine.CauseEvaluationError }
func (broken) Error() string                        { return "undefined decision" }

type broken struct{}

func TestCauseOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want engine.Cause
	}{
		{nil, ""},
		{errors.New("boom"), engine.CauseHookError},
		{fmt.Errorf("wrapped: %w", denied{}), engine.CausePolicyDenied},
		{broken{}, engine.CauseEvaluationError},
		{fmt.Errorf("slow: %w", context.DeadlineExceeded), engine.CauseTimeout},
		{&engine.PlanError{Rule: 4, Code: engine.PlanCodeDependencyCycle}, engine.CauseInvalidPlan},
		{&engine.ContractError{Hook: "h", Reason: engine.ReasonUnknownKind}, engine.CauseContractError},
		{&engine.RequiredAfterPlanningError{Hook: "h", Reason: engine.ReasonInvalidType, Cause: engine.ErrNoPlan}, engine.CauseInvalidType},
		{&engine.RequiredAfterPlanningError{Hook: "h", Reason: engine.ReasonHookError, Cause: denied{}}, engine.CausePolicyDenied},
	} {
		if got := engine.CauseOf(tc.err); got != tc.want {
			t.Errorf("CauseOf(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A policy refusal and a broken review both fail closed, but the record tells them
// apart by cause, keeps the violations and the rejected candidate; an invalid incoming
// plan is recorded too, without failing the request.
func TestRecord_RefusalsToldApartFromFailures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		err   error
		cause engine.Cause
	}{
		{"policy denial", denied{[]engine.Violation{{Code: "capability_not_allowed", StepID: "step-1", Message: "no"}}}, engine.CausePolicyDenied},
		{"evaluation error", broken{}, engine.CauseEvaluationError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook := &requiredHook{planHook{name: "review", fn: func(context.Context, *engine.PipelineContext, *engine.RoutingPlan) (*engine.RoutingPlan, error) {
				return nil, tc.err
			}}}
			d := newDriver(t, mustNew(t, []engine.Hook{hook}, engine.WithCatalog(testCatalog(t))), nil, nil)
			s, err := d.Open(ctx, "r", engine.Opening{Text: "q"})
			if err != nil {
				t.Fatal(err)
			}
			bad := &engine.RoutingPlan{PlanID: "bad", Steps: []engine.RoutingStep{{StepID: "step-9", AgentName: "nobody", Namespace: "tools"}}}
			if _, err := s.AfterPlanning(ctx, bad, 0); !errors.Is(err, engine.ErrInvalidPlan) {
				t.Fatalf("invalid plan: %v", err)
			}
			if _, err := s.AfterPlanning(ctx, threeStepPlan(), 0); err == nil {
				t.Fatal("the review's failure did not reject the plan")
			}
			rec, err := s.Record(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != engine.RecordFailed || rec.Cause != tc.cause || len(rec.Rejections) != 2 {
				t.Fatalf("record: status %s cause %q, %d rejections", rec.Status, rec.Cause, len(rec.Rejections))
			}
			invalid, review := rec.Rejections[0], rec.Rejections[1]
			if invalid.Cause != engine.CauseInvalidPlan || invalid.Code != engine.PlanCodeUnknownAgent || invalid.Plan.PlanID != "bad" {
				t.Errorf("invalid plan rejection = %+v", invalid)
			}
			if review.Cause != tc.cause || review.Hook != "review" || review.Plan == nil || len(review.Plan.Steps) != 3 ||
				len(review.Violations) != len(engine.ViolationsOf(tc.err)) {
				t.Errorf("review rejection = %+v", review)
			}
			if d := rec.PipelineHooks[len(rec.PipelineHooks)-1].Decision; d.Cause != tc.cause || d.Reason != engine.ReasonHookError {
				t.Errorf("decision = %+v", d)
			}
		})
	}
}

// RecordNotFound is ErrRecordNotFound naming the request, in the words of
// fmt.Errorf("%w: %q").
func TestRecordNotFound(t *testing.T) {
	err := engine.RecordNotFound(`r"1`)
	if !errors.Is(err, engine.ErrRecordNotFound) || err.Error() != fmt.Errorf("%w: %q", engine.ErrRecordNotFound, `r"1`).Error() {
		t.Fatalf("%v", err)
	}
}
