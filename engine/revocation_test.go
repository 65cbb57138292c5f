package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// rollout keeps every generation it was given and serves the one promoted last as
// live, as a reload registry does.
type rollout struct {
	all  map[string]*engine.Generation
	live atomic.Pointer[engine.Generation]
}

func newRollout(gens ...*engine.Generation) *rollout {
	r := &rollout{all: map[string]*engine.Generation{}}
	for _, g := range gens {
		r.all[g.ID] = g
	}
	r.live.Store(gens[0])
	return r
}

func (r *rollout) Live() *engine.Generation            { return r.live.Load() }
func (r *rollout) Lookup(id string) *engine.Generation { return r.all[id] }
func (r *rollout) promote(id string)                   { r.live.Store(r.all[id]) }

// turnGuard is a generation whose one guard of turn operations answers with verdict.
func turnGuard(t *testing.T, id string, verdict error) *engine.Generation {
	t.Helper()
	revision := "rev-" + id
	runner, err := op.Compile(op.Set{PolicyRevision: revision, Guards: []op.Guard{{Name: "turns", Operations: []op.Operation{op.Turn},
		Check: func(context.Context, op.Call) error { return verdict }}}})
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Generation{ID: id, Pipeline: mustNew(t, nil), Binding: engine.BindingOff, PolicyRevision: revision, Runner: runner}
}

// Revocation reaches requests in flight: a request keeps the generation it opened on,
// but once another generation is live its operation checks run the live generation's
// guards too; a deny from either denies, and the record names both revisions.
func TestHardening_LiveGuardsReachRequestsInFlight(t *testing.T) {
	ctx := context.Background()
	revoked, own := op.Deny("revoked", "the live generation revokes turns"), op.Deny("own", "the request's generation denies turns")
	for _, tc := range []struct {
		name             string
		ownVerdict, live error
		wantCode         string // "" for allowed
		wantLiveGen      bool   // the record names the live generation
	}{
		{name: "both allow", wantLiveGen: true},
		{name: "the live generation denies", live: revoked, wantCode: "revoked", wantLiveGen: true},
		{name: "the request's generation denies", ownVerdict: own, wantCode: "own"},
		{name: "both deny", ownVerdict: own, live: revoked, wantCode: "own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gens := newRollout(turnGuard(t, "g1", tc.ownVerdict), turnGuard(t, "g2", tc.live))
			d, mem := memoryDriver(t, gens)
			s, err := d.Open(ctx, "r", engine.Opening{Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.BeforePlanning(ctx); err != nil {
				t.Fatal(err)
			}
			gens.promote("g2")
			res, err := d.Check(ctx, op.Call{Operation: op.Turn, RequestID: "r", Request: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			code := "" // allowed
			if !res.Allowed {
				code = res.Denial.Code
			}
			if code != tc.wantCode {
				t.Errorf("check denied with code %q, want %q (\"\" is allowed)", code, tc.wantCode)
			}
			if res.Generation != "g1" {
				t.Errorf("the check ran on generation %q, want the request's own g1", res.Generation)
			}
			rec, err := mem.Get(ctx, "r")
			if err != nil || len(rec.Operations) != 1 {
				t.Fatalf("record: %+v, %v, want one operation check", rec, err)
			}
			got := rec.Operations[0]
			if got.Generation != "g1" || got.PolicyRevision != "rev-g1" || string(got.Code) != tc.wantCode {
				t.Errorf("recorded %+v, want generation g1 (rev-g1) and code %q", got, tc.wantCode)
			}
			if named := got.LiveGeneration == "g2" && got.LivePolicyRevision == "rev-g2"; named != tc.wantLiveGen {
				t.Errorf("recorded live generation %q (%q), want it named: %v", got.LiveGeneration, got.LivePolicyRevision, tc.wantLiveGen)
			}
		})
	}
}

// The live generation's tool_call guards see the accepted step beside the call, also
// when the request's own generation has no guard that would have needed it.
func TestHardening_LiveGuardsSeeTheAcceptedStep(t *testing.T) {
	ctx := context.Background()
	var seen map[string]any
	runner, err := op.Compile(op.Set{PolicyRevision: "rev-g2", Guards: []op.Guard{{Name: "step", Operations: []op.Operation{op.ToolCall},
		Check: func(_ context.Context, c op.Call) error {
			seen = c.Step
			if c.Step == nil {
				return op.Deny("no_step", "the guard got no accepted step")
			}
			return nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	pipeline := mustNew(t, nil, engine.WithCatalog(testCatalog(t)))
	gens := newRollout(&engine.Generation{ID: "g1", Pipeline: pipeline, Binding: engine.BindingStrict, PolicyRevision: "rev-g1"},
		&engine.Generation{ID: "g2", Pipeline: pipeline, Binding: engine.BindingStrict, PolicyRevision: "rev-g2", Runner: runner})
	d, _ := memoryDriver(t, gens)
	s, err := d.Open(ctx, "r", engine.Opening{Text: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterPlanning(ctx, threeStepPlan(), 0); err != nil {
		t.Fatal(err)
	}
	gens.promote("g2")
	res, err := d.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: "r", StepID: "step-1", Namespace: "tools", AgentName: "weather",
		Capability: "forecast", Parameters: map[string]any{"city": "Oslo", "days": 2.0}})
	if err != nil || !res.Allowed {
		t.Fatalf("check: %+v, %v; want allowed", res, err)
	}
	if seen["step_id"] != "step-1" || seen["agent_name"] != "weather" {
		t.Errorf("the live guard saw step %v", seen)
	}
}

// A request's generation has a maximum age: past its max_request_age every stage
// call and check on the request is refused with generation_expired, while its record
// stays readable.
func TestHardening_MaxRequestAgeExpiresRequests(t *testing.T) {
	ctx := context.Background()
	const age = 50 * time.Millisecond
	gen := &engine.Generation{ID: "g", Pipeline: mustNew(t, nil), Binding: engine.BindingOff, MaxRequestAge: age}
	d, mem := memoryDriver(t, engine.Fixed{Gen: gen})
	s, err := d.Open(ctx, "r", engine.Opening{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeforePlanning(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * age) // only ever longer on a loaded machine: the age is past either way
	expired := func(what string, err error) {
		t.Helper()
		var refusal *engine.RefusalError
		if !errors.As(err, &refusal) || refusal.Code != engine.RefusedGenerationExpired {
			t.Errorf("%s past max_request_age: %v, want generation_expired", what, err)
		}
	}
	_, err = d.Check(ctx, op.Call{Operation: op.Turn, RequestID: "r", Request: "hi"})
	expired("a check", err)
	_, err = d.Resume(ctx, engine.StageAfterSynthesis, "r", engine.Opening{})
	expired("after_synthesis", err)
	if rec, err := mem.Get(ctx, "r"); err != nil || rec == nil {
		t.Errorf("the record of an expired request: %v, %v", rec, err)
	}
	// A new request on the same generation starts its own clock.
	if _, err := d.Open(ctx, "r2", engine.Opening{Text: "hi"}); err != nil {
		t.Errorf("a new request: %v", err)
	}
}
