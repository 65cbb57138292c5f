package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Trail collects the invocation records of one request, across all of its stages. A
// nil *Trail turns recording off: the runners then build no records, diff no
// enrichments and serialize nothing, and ReportEffect is a no-op.
//
// A Trail is safe for concurrent use, because detached work may update an effect after
// its invocation completed. Such a late update calls the function set by OnLateEffect,
// so the owner can persist a new revision of the execution record.
type Trail struct {
	mu          sync.Mutex
	invocations []Invocation
	completed   []bool
	onLate      func()
}

// NewTrail returns an empty trail.
func NewTrail() *Trail { return &Trail{} }

// OnLateEffect sets fn to be called, without the trail's lock held, after an effect
// update that arrives once its invocation has completed.
func (t *Trail) OnLateEffect(fn func()) {
	t.mu.Lock()
	t.onLate = fn
	t.mu.Unlock()
}

// Invocations returns a deep copy of every invocation recorded so far, in order.
func (t *Trail) Invocations() []Invocation { return t.Since(0) }

// Since returns a deep copy of the invocations recorded from index n on.
func (t *Trail) Since(n int) []Invocation {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n >= len(t.invocations) {
		return nil
	}
	out := make([]Invocation, len(t.invocations)-n)
	for i := range out {
		out[i] = copyInvocation(t.invocations[n+i])
	}
	return out
}

// reserve makes room for n more invocations, so a stage run grows the trail once.
func (t *Trail) reserve(n int) {
	if t == nil || n <= 0 {
		return
	}
	t.mu.Lock()
	t.invocations = slices.Grow(t.invocations, n)
	t.completed = slices.Grow(t.completed, n)
	t.mu.Unlock()
}

func (t *Trail) open(inv Invocation) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.invocations = append(t.invocations, inv)
	t.completed = append(t.completed, false)
	return len(t.invocations) - 1
}

// close completes invocation i; effects are appended after the ones the hook reported.
func (t *Trail) close(i int, status InvocationStatus, d time.Duration, err error, dec DecisionRecord, effects []Effect) {
	t.mu.Lock()
	defer t.mu.Unlock()
	inv := &t.invocations[i]
	inv.Status = status
	inv.Duration = max(d, 0)
	if err != nil {
		inv.Error = err.Error()
	}
	inv.Decision = &dec
	inv.Effects = append(inv.Effects, effects...)
	t.completed[i] = true
}

// Effect reporting errors.
var (
	ErrInvalidEffect       = errors.New("invalid effect")
	ErrEffectRegression    = errors.New("effect update from a terminal status back to pending")
	ErrEffectAfterComplete = errors.New("new effect id after the invocation completed")
)

type effectSinkKey struct{}

type effectSink struct {
	trail *Trail
	index int
}

func withEffectSink(ctx context.Context, t *Trail, i int) context.Context {
	return context.WithValue(ctx, effectSinkKey{}, &effectSink{trail: t, index: i})
}

// ReportEffect records or updates (by EffectID) an effect of the hook invocation that
// ctx belongs to. A new id must be announced before the hook returns; later reports
// may update it, but never from a terminal status back to pending. Data must be valid
// JSON and is copied. Without recording (no trail) it is a no-op returning nil.
// Errors are diagnostics: they must not change the hook's business outcome
// (docs/semantics.md §6.2).
func ReportEffect(ctx context.Context, e Effect) error {
	sink, _ := ctx.Value(effectSinkKey{}).(*effectSink)
	if sink == nil {
		return nil
	}
	if err := validateEffect(e); err != nil {
		return err
	}
	e.Data = append(json.RawMessage(nil), e.Data...)
	late, err := sink.trail.report(sink.index, e)
	if err == nil && late != nil {
		late()
	}
	return err
}

func validateEffect(e Effect) error {
	switch {
	case e.EffectID == "":
		return fmt.Errorf("%w: empty effect_id", ErrInvalidEffect)
	case e.SchemaVersion < 0:
		return fmt.Errorf("%w: negative schema_version", ErrInvalidEffect)
	case len(e.Data) > 0 && !json.Valid(e.Data):
		return fmt.Errorf("%w: effect %q data is not valid JSON", ErrInvalidEffect, e.EffectID)
	}
	switch e.Status {
	case EffectPending, EffectSucceeded, EffectPartial, EffectFailed, EffectSkipped:
		return nil
	}
	return fmt.Errorf("%w: effect %q has unknown status %q", ErrInvalidEffect, e.EffectID, e.Status)
}

func (t *Trail) report(i int, e Effect) (late func(), err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	inv := &t.invocations[i]
	for j := range inv.Effects {
		if inv.Effects[j].EffectID != e.EffectID {
			continue
		}
		prev := inv.Effects[j]
		if prev.Status.Terminal() && !e.Status.Terminal() {
			return nil, fmt.Errorf("%w: effect %q", ErrEffectRegression, e.EffectID)
		}
		inv.Effects[j] = e.replacing(prev, time.Now().UTC())
		if t.completed[i] {
			return t.onLate, nil
		}
		return nil, nil
	}
	if t.completed[i] {
		return nil, fmt.Errorf("%w: effect %q", ErrEffectAfterComplete, e.EffectID)
	}
	e.History = nil
	inv.Effects = append(inv.Effects, e)
	return nil, nil
}

// find appends a finding to invocation i.
func (t *Trail) find(i int, f Finding) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.invocations[i].WouldDeny = append(t.invocations[i].WouldDeny, f)
}

// replacing returns e as the update of prev at time at: prev's history, and prev's
// status added to it when e changes the status.
func (e Effect) replacing(prev Effect, at time.Time) Effect {
	e.History = prev.History
	if prev.Status != e.Status {
		e.History = append(slices.Clip(e.History), EffectChange{Status: prev.Status, ReplacedAt: at})
	}
	return e
}

func copyInvocation(inv Invocation) Invocation {
	if inv.WouldDeny != nil {
		inv.WouldDeny = cloneFindings(inv.WouldDeny)
	}
	if inv.Effects != nil {
		effects := make([]Effect, len(inv.Effects))
		for i, e := range inv.Effects {
			e.Data = append(json.RawMessage(nil), e.Data...)
			e.History = slices.Clone(e.History)
			effects[i] = e
		}
		inv.Effects = effects
	}
	if inv.Decision != nil {
		d := *inv.Decision
		inv.Decision = &d
	}
	return inv
}

func cloneFindings(fs []Finding) []Finding {
	out := make([]Finding, len(fs))
	for i, f := range fs {
		f.Violations = slices.Clone(f.Violations)
		out[i] = f
	}
	return out
}
