package engine

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// invocation is one hook call in progress: its span, and its record slot in the trail
// and its start time (when recording). A runner opens one per hook with begin, calls
// the hook with ctx, then ends it exactly once with finish, or with panicked from a
// deferred recover.
type invocation struct {
	tel     telemetry
	trail   *Trail
	index   int
	started time.Time
	span    trace.Span
	ctx     context.Context
}

// begin opens the record and span of hook e in stage; seq is 1-based within the run.
func (p *Pipeline) begin(ctx context.Context, e entry, stage Stage, seq, planPhase int, trail *Trail) invocation {
	inv := invocation{tel: p.tel, trail: trail}
	ctx, inv.span = p.tel.start(ctx, e)
	if trail != nil {
		inv.started = time.Now()
		rec := Invocation{
			HookName:  e.name,
			Phase:     stage,
			Sequence:  seq,
			PlanPhase: planPhase,
			StartedAt: inv.started.UTC(),
		}
		if !e.mode.Enforcing() {
			rec.Mode = e.mode
		}
		if sc := trace.SpanContextFromContext(ctx); inv.span != nil && sc.IsValid() {
			rec.TraceID, rec.SpanID = sc.TraceID().String(), sc.SpanID().String()
		}
		inv.index = trail.open(rec)
		ctx = withEffectSink(ctx, trail, inv.index)
	}
	inv.ctx = ctx
	return inv
}

// finish completes the record (when recording) and ends the span. A failure's decision
// gets its cause.
func (inv *invocation) finish(status InvocationStatus, dec DecisionRecord, err error, effects []Effect) {
	if err != nil && dec.Cause == "" {
		dec.Cause = causeFor(dec.Reason, err)
	}
	if inv.trail != nil {
		inv.trail.close(inv.index, status, time.Since(inv.started), err, dec, effects)
	}
	inv.tel.end(inv.span, dec, err)
}

// panicked records a hook panic as a failed invocation whose decision is
// <policy>/propagate_panic/panic. The caller re-panics with the original value.
func (inv *invocation) panicked(value any, policy FailurePolicy, effects []Effect) {
	err := fmt.Errorf("pipeline hook panic: %v", value)
	inv.finish(InvocationFailed, DecisionRecord{FailurePolicy: policy, Action: ActionPropagatePanic, Reason: ReasonPanic}, err, effects)
}

func decide(policy FailurePolicy, action Action, reason Reason) DecisionRecord {
	return DecisionRecord{FailurePolicy: policy, Action: action, Reason: reason}
}

// causeFor is the cause of a failure recorded with reason: the reasons that name a kind
// of failure map to it, any other to the error's own cause (CauseOf).
func causeFor(reason Reason, err error) Cause {
	switch reason {
	case ReasonCloneFailed:
		return CauseCloneFailed
	case ReasonInvalidType:
		return CauseInvalidType
	case ReasonInvalidPlan:
		return CauseInvalidPlan
	case ReasonPanic:
		return CausePanic
	case ReasonMissingPayload, ReasonUnknownKind:
		return CauseContractError
	}
	return CauseOf(err)
}

// find records a finding on the invocation (when recording).
func (inv *invocation) find(f Finding) {
	if inv.trail != nil {
		inv.trail.find(inv.index, f)
	}
}
