package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
)

// ContractError reports a before_planning decision that breaks the decision contract:
// no payload (missing_payload) or an empty or unknown kind (unknown_kind). It fails the
// request: serving or silently ignoring such a decision could bypass cache checks.
type ContractError struct {
	Hook   string
	Reason Reason
}

// DecisionCause is CauseContractError.
func (*ContractError) DecisionCause() Cause { return CauseContractError }

func (e *ContractError) Error() string {
	return fmt.Sprintf("before-planning hook %q broke the decision contract: %s", e.Hook, e.Reason)
}

// ShortCircuitOutcome is an accepted before_planning short circuit.
type ShortCircuitOutcome struct {
	Hook         string           `json:"hook"`
	Kind         ShortCircuitKind `json:"kind"`
	Reason       Reason           `json:"reason"`
	ShortCircuit ShortCircuit     `json:"short_circuit"`
	// CachedAgainst is a copy of the decision's variation map (cache decisions only).
	CachedAgainst map[string]string `json:"cached_against,omitempty"`
	// Response is the request's answer: confidence 1.0 and the request metadata merged
	// with the enrichments, enrichments winning on conflict.
	Response Response `json:"response"`
}

// Response is the answer a request returns to its caller.
type Response struct {
	Response   string         `json:"response"`
	Confidence float64        `json:"confidence"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// BeforePlanning runs the before_planning stage on pctx: PromoteMetadata, then each
// before_planning hook in registration order, until one short circuit is accepted.
//
// A hook error or a nil decision is recorded and the next hook runs (fail open). A
// decision without payload or with an unknown kind returns a *ContractError. An
// authoritative decision (or a legacy short circuit) is always accepted; a cache
// decision only when cache reads are enabled and its variation map equals the gate's
// exactly (a key on one side only is a mismatch). The first accepted decision wins and
// is returned; (nil, nil) means planning should proceed. A hook panic is recorded and
// re-raised with its original value. The contract is docs/semantics.md §3.
//
// A hook in warn or audit mode runs on a copy of the enrichments: its changes are
// dropped and a short circuit it decides (or a broken contract) is recorded as a
// finding, never taken (docs/semantics.md §6.9).
func (p *Pipeline) BeforePlanning(ctx context.Context, pctx *PipelineContext, gate Gate, trail *Trail) (*ShortCircuitOutcome, error) {
	PromoteMetadata(pctx)
	if pctx.Enrichments == nil {
		pctx.Enrichments = make(map[string]any)
	}
	// snap is the encoding of the enrichments before the next hook runs: each hook's
	// after-snapshot is the next one's before-snapshot. Nil when not recording.
	trail.reserve(len(p.before))
	var snap enrichmentSnapshot
	if trail != nil && len(p.before) > 0 {
		snap = snapshotEnrichments(pctx.Enrichments)
	}
	for i := range p.before {
		out, err := p.runBefore(ctx, &p.before[i], i+1, pctx, gate, trail, &snap)
		if out != nil || err != nil {
			return out, err
		}
	}
	return nil, nil
}

func (p *Pipeline) runBefore(ctx context.Context, e *beforeEntry, seq int, pctx *PipelineContext, gate Gate, trail *Trail, snap *enrichmentSnapshot) (out *ShortCircuitOutcome, err error) {
	inv := p.begin(ctx, e.entry, StageBeforePlanning, seq, 0, trail)
	effects := func() []Effect {
		if *snap == nil {
			return nil
		}
		var changes []Effect
		changes, *snap = snap.diff(pctx.Enrichments, inv.started)
		return changes
	}
	defer func() {
		if r := recover(); r != nil {
			inv.panicked(r, FailOpen, effects())
			panic(r)
		}
	}()

	run := pctx
	if !e.mode.Enforcing() { // what the hook does is recorded, not applied
		run = &PipelineContext{Request: pctx.Request, Metadata: pctx.Metadata, Enrichments: copyEnrichments(pctx.Enrichments)}
	}
	decision, hookErr := p.callBefore(inv.ctx, e, run, gate)
	if errors.Is(hookErr, ErrSkipped) {
		inv.finish(InvocationSkipped, decide(FailOpen, ActionContinue, ReasonSkipped), nil, effects())
		return nil, nil
	}
	if hookErr != nil {
		p.logger.WarnContext(ctx, "before_planning hook failed; continuing", "hook", e.name, "error", hookErr)
		inv.finish(InvocationFailed, decide(FailOpen, ActionContinue, ReasonHookError), hookErr, effects())
		return nil, nil
	}
	if decision == nil {
		inv.finish(InvocationSucceeded, decide(FailOpen, ActionContinue, ReasonNoDecision), nil, effects())
		return nil, nil
	}
	rec, accepted, contract := judge(decision, gate)
	if !e.mode.Enforcing() {
		if accepted || contract {
			inv.find(Finding{Mode: e.mode, Rule: "hook " + e.name, Code: string(rec.Action), Reason: string(rec.Reason), Cause: causeFor(rec.Reason, nil)})
		}
		inv.finish(InvocationSucceeded, rec, nil, effects())
		return nil, nil
	}
	p.tel.shortCircuit(ctx, inv.span, rec.Reason, decision.Kind, accepted)
	if contract {
		cerr := &ContractError{Hook: e.name, Reason: rec.Reason}
		inv.finish(InvocationFailed, rec, cerr, effects())
		return nil, cerr
	}
	inv.finish(InvocationSucceeded, rec, nil, effects())
	if !accepted {
		return nil, nil
	}
	return &ShortCircuitOutcome{
		Hook:          e.name,
		Kind:          decision.Kind,
		Reason:        rec.Reason,
		ShortCircuit:  *decision.ShortCircuit,
		CachedAgainst: cloneStrings(decision.CachedAgainst),
		Response:      shortCircuitResponse(decision.ShortCircuit.Response, pctx),
	}, nil
}

// callBefore calls the decision form when the hook has it, else the legacy form, whose
// short circuit counts as authoritative.
func (p *Pipeline) callBefore(ctx context.Context, e *beforeEntry, pctx *PipelineContext, gate Gate) (*ShortCircuitDecision, error) {
	if e.decision != nil {
		return e.decision.BeforePlanningDecision(ctx, pctx, gate)
	}
	sc, err := e.legacy.BeforePlanning(ctx, pctx)
	if err != nil || sc == nil {
		return nil, err
	}
	if len(gate.vary) > 0 {
		p.logger.WarnContext(ctx, "legacy short circuit treated as authoritative while cache dimensions are reserved", "hook", e.name)
	}
	return &ShortCircuitDecision{ShortCircuit: sc, Kind: KindAuthoritative}, nil
}

// judge applies the decision contract. It returns the decision record, whether the
// short circuit is accepted, and whether the decision broke the contract.
func judge(d *ShortCircuitDecision, gate Gate) (rec DecisionRecord, accepted, contract bool) {
	switch {
	case d.ShortCircuit == nil:
		return decide(FailClosed, ActionTerminate, ReasonMissingPayload), false, true
	case d.Kind == KindAuthoritative:
		return decide(FailClosed, ActionShortCircuit, ReasonAuthoritative), true, false
	case d.Kind != KindCache:
		return decide(FailClosed, ActionTerminate, ReasonUnknownKind), false, true
	case gate.readDisabled:
		return decide(FailClosed, ActionContinue, ReasonCacheReadDisabled), false, false
	case !maps.Equal(cloneStrings(d.CachedAgainst), gate.vary):
		return decide(FailClosed, ActionContinue, ReasonCacheMismatch), false, false
	}
	return decide(FailClosed, ActionShortCircuit, ReasonCacheMatch), true, false
}

func shortCircuitResponse(text string, pctx *PipelineContext) Response {
	meta := make(map[string]any, len(pctx.Metadata)+len(pctx.Enrichments))
	maps.Copy(meta, pctx.Metadata)
	maps.Copy(meta, pctx.Enrichments)
	return Response{Response: text, Confidence: 1.0, Metadata: meta}
}
