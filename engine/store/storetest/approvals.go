package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// ApprovalStores is a state store that keeps approvals, as the daemon's stores do.
type ApprovalStores interface {
	engine.StateStore
	engine.ApprovalStore
}

// tradeLimit is the guard of the approvals suite: a trade above 10000 needs an
// approval (effect require_approval), a trade of a blocked symbol is denied.
func tradeLimit(ctx context.Context, call op.Call) error {
	if call.Parameters["symbol"] == "BLOCKED" {
		return op.Deny("symbol_blocked", "the symbol is blocked")
	}
	if amount, _ := call.Parameters["amount"].(float64); amount > 10000 {
		return engine.RequireApproval(ctx, engine.ApprovalAsk{Rule: "trade-limit", Code: "trade_limit", Reason: "trades above 10000 need approval"})
	}
	return nil
}

func approvalDriver(t *testing.T, s ApprovalStores, ttl time.Duration) *engine.Driver {
	t.Helper()
	runner, err := op.Compile(op.Set{PolicyRevision: "r1", Guards: []op.Guard{{Name: "trade-limit", Operations: []op.Operation{op.ToolCall}, Check: tradeLimit}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := engine.NewDriver(engine.DriverConfig{
		Generations: engine.Fixed{Gen: &engine.Generation{ID: "g-approvals", Runner: runner, PolicyRevision: "r1", Binding: engine.BindingOff, ApprovalTTL: ttl}},
		States:      s,
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func trade(request, step string, amount float64) op.Call {
	return op.Call{Operation: op.ToolCall, RequestID: request, StepID: step, Namespace: "finance", AgentName: "broker",
		Capability: "execute_trade", Parameters: map[string]any{"symbol": "ACME", "amount": amount}}
}

// approvalKind is the code of an *engine.ApprovalError, "" for nil and "other" for
// any other error.
func approvalKind(err error) string {
	var ae *engine.ApprovalError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ae):
		return string(ae.Code)
	}
	return "other: " + err.Error()
}

// Approvals checks approvals (engine.ApprovalStore) on stores made by newPair, which
// returns two handles on one backend, two replicas: a call held on one is decided and
// passes on the other. An approved call passes once with exactly its parameters; a
// rejection and an expiry are final; of concurrent decisions one is taken, of
// concurrent checks of an approved call one passes.
func Approvals(t *testing.T, newPair func(t *testing.T) (ApprovalStores, ApprovalStores)) {
	ctx := context.Background()
	t.Run("StaleApprovalRevisionNeverReplacesNewer", func(t *testing.T) {
		s, _ := newPair(t)
		a := &engine.Approval{ID: "apr_x_1", Slot: "0123456789abcdef0123456789abcdef", Seq: 1, Revision: 2, Status: engine.ApprovalPending}
		if err := s.PutApproval(ctx, a, time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, rev := range []int64{1, 2} {
			stale := *a
			stale.Revision, stale.Status = rev, engine.ApprovalRejected
			if err := s.PutApproval(ctx, &stale, time.Minute); !errors.Is(err, engine.ErrStaleRevision) {
				t.Fatalf("put revision %d over 2: err = %v, want ErrStaleRevision", rev, err)
			}
		}
		got, ok, err := s.GetApproval(ctx, a.Slot)
		if err != nil || !ok || got.Status != engine.ApprovalPending || got.Revision != 2 {
			t.Fatalf("GetApproval = %+v, %v, %v", got, ok, err)
		}
		if _, ok, err := s.GetApproval(ctx, "ffffffffffffffffffffffffffffffff"); ok || err != nil {
			t.Fatalf("GetApproval(absent) = ok %v, err %v", ok, err)
		}
	})

	t.Run("HeldDecidedOnAnotherReplicaPassesOnce", func(t *testing.T) {
		a, b := newPair(t)
		held, decider := approvalDriver(t, a, time.Hour), approvalDriver(t, b, time.Hour)
		res, err := held.Check(ctx, trade("req-1", "step-1", 25000))
		if err != nil || res.Allowed || res.Denial.Code != engine.DenialApprovalRequired || res.Approval == nil || res.Approval.Status != engine.ApprovalPending {
			t.Fatalf("check above the limit = %+v, %v; want approval_required with a pending approval", res, err)
		}
		id := res.Approval.ID
		if small, err := held.Check(ctx, trade("req-1", "step-2", 500)); err != nil || !small.Allowed || small.Approval != nil {
			t.Fatalf("check below the limit = %+v, %v; want allowed without approval", small, err)
		}
		if again, _ := held.Check(ctx, trade("req-1", "step-1", 25000)); again.Approval == nil || again.Approval.ID != id || again.Allowed {
			t.Fatalf("the same call again = %+v; want the same pending approval %s", again, id)
		}
		blocked := trade("req-1", "step-9", 25000)
		blocked.Parameters["symbol"] = "BLOCKED"
		if den, _ := held.Check(ctx, blocked); den.Allowed || den.Denial.Code != "symbol_blocked" || den.Approval != nil {
			t.Fatalf("a call another guard denies = %+v; want symbol_blocked, no approval", den)
		}
		pending, err := decider.Approvals(ctx, engine.ApprovalFilter{Status: engine.ApprovalPending})
		if err != nil || len(pending) != 1 || pending[0].ID != id || pending[0].Rule != "trade-limit" || pending[0].Parameters["amount"] != 25000.0 {
			t.Fatalf("pending on the other replica = %+v, %v", pending, err)
		}
		if _, err := decider.Decide(ctx, id, "maybe", "alice", ""); approvalKind(err) != string(engine.ApprovalInvalid) {
			t.Fatalf("Decide(maybe) err = %v, want invalid_approval", err)
		}
		if _, err := decider.Decide(ctx, "apr_0123456789abcdef0123456789abcdef_1", engine.DecisionApprove, "alice", ""); approvalKind(err) != string(engine.ApprovalUnknown) {
			t.Fatalf("Decide(unknown id) err = %v, want unknown_approval", err)
		}
		ok, err := decider.Decide(ctx, id, engine.DecisionApprove, "alice", "checked with the desk")
		if err != nil || ok.Status != engine.ApprovalApproved || ok.DecidedBy != "alice" || ok.Comment != "checked with the desk" {
			t.Fatalf("Decide(approve) = %+v, %v", ok, err)
		}
		if again, err := decider.Decide(ctx, id, engine.DecisionApprove, "bob", "again"); err != nil || again.DecidedBy != "alice" {
			t.Fatalf("a re-sent approve = %+v, %v; want the decision as it was", again, err)
		}
		if _, err := decider.Decide(ctx, id, engine.DecisionReject, "bob", ""); approvalKind(err) != string(engine.ApprovalDecided) {
			t.Fatalf("reject after approve err = %v, want approval_decided", err)
		}
		// Changed parameters, or another request, are other calls.
		changed, _ := held.Check(ctx, trade("req-1", "step-1", 25001))
		other, _ := held.Check(ctx, trade("req-2", "step-1", 25000))
		for name, r := range map[string]*engine.CheckResult{"changed parameters": changed, "another request": other} {
			if r.Allowed || r.Denial.Code != engine.DenialApprovalRequired || r.Approval == nil || r.Approval.ID == id {
				t.Fatalf("%s = %+v; want a new approval_required", name, r)
			}
		}
		passed, err := held.Check(ctx, trade("req-1", "step-1", 25000))
		if err != nil || !passed.Allowed || passed.Approval == nil || passed.Approval.ID != id || passed.Approval.UsedAt == nil || passed.Approval.UsedBy != passed.DecisionID {
			t.Fatalf("the approved call = %+v, %v; want allowed, using %s", passed, err, id)
		}
		second, err := held.Check(ctx, trade("req-1", "step-1", 25000))
		if err != nil || second.Allowed || second.Denial.Code != engine.DenialApprovalRequired || second.Approval.ID == id {
			t.Fatalf("the approved call a second time = %+v, %v; want a new approval_required", second, err)
		}
		// The slot holds the call's next approval now; the used one lives on in the
		// execution record.
		if got, err := decider.Approval(ctx, id); approvalKind(err) != string(engine.ApprovalUnknown) {
			t.Fatalf("Approval(used and replaced) = %+v, %v; want unknown_approval", got, err)
		}
	})

	t.Run("RejectionAndExpiryAreFinal", func(t *testing.T) {
		a, b := newPair(t)
		held, decider := approvalDriver(t, a, time.Hour), approvalDriver(t, b, time.Hour)
		res, _ := held.Check(ctx, trade("req-r", "step-1", 20000))
		if _, err := decider.Decide(ctx, res.Approval.ID, engine.DecisionReject, "carol", "too large"); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			r, err := held.Check(ctx, trade("req-r", "step-1", 20000))
			if err != nil || r.Allowed || r.Denial.Code != engine.DenialApprovalRejected || r.Approval.DecidedBy != "carol" {
				t.Fatalf("a rejected call = %+v, %v; want approval_rejected by carol", r, err)
			}
		}
		if r, _ := held.Check(ctx, trade("req-r", "step-2", 100)); !r.Allowed {
			t.Fatalf("an untouched call = %+v; want allowed", r)
		}
		// A TTL of 1ns: the approval has expired by the time anything reads it.
		short, shortDecider := approvalDriver(t, a, time.Nanosecond), approvalDriver(t, b, time.Nanosecond)
		res, _ = short.Check(ctx, trade("req-e", "step-1", 20000))
		if res.Approval == nil {
			t.Fatalf("check = %+v; want an approval", res)
		}
		if _, err := shortDecider.Decide(ctx, res.Approval.ID, engine.DecisionApprove, "alice", ""); approvalKind(err) != string(engine.ApprovalHasExpired) {
			t.Fatalf("approving an expired approval: err = %v, want approval_expired", err)
		}
		if r, _ := short.Check(ctx, trade("req-e", "step-1", 20000)); r.Allowed || r.Denial.Code != engine.DenialApprovalExpired {
			t.Fatalf("an expired call = %+v; want approval_expired", r)
		}
		expired, err := shortDecider.Approvals(ctx, engine.ApprovalFilter{Status: engine.ApprovalExpired, RequestID: "req-e"})
		if err != nil || len(expired) != 1 || expired[0].ID != res.Approval.ID {
			t.Fatalf("expired approvals of req-e = %+v, %v", expired, err)
		}
	})

	t.Run("ConcurrentDecisionsOneWins", func(t *testing.T) {
		a, b := newPair(t)
		drivers := []*engine.Driver{approvalDriver(t, a, time.Hour), approvalDriver(t, b, time.Hour)}
		res, _ := drivers[0].Check(ctx, trade("req-c", "step-1", 30000))
		id := res.Approval.ID
		var wg sync.WaitGroup
		results := make([]*engine.Approval, 8)
		errs := make([]error, 8)
		for i := range 8 {
			wg.Go(func() {
				decision := engine.DecisionApprove
				if i%2 == 1 {
					decision = engine.DecisionReject
				}
				results[i], errs[i] = drivers[i%2].Decide(ctx, id, decision, "approver", "")
			})
		}
		wg.Wait()
		var final engine.ApprovalStatus
		for i := range 8 {
			switch {
			case errs[i] == nil && final == "":
				final = results[i].Status
			case errs[i] == nil && results[i].Status != final:
				t.Fatalf("decisions %v and %v both taken", final, results[i].Status)
			case errs[i] != nil && approvalKind(errs[i]) != string(engine.ApprovalDecided):
				t.Fatalf("decision %d: err = %v, want approval_decided or success", i, errs[i])
			}
		}
		got, err := drivers[1].Approval(ctx, id)
		if err != nil || got.Status != final {
			t.Fatalf("stored approval = %+v, %v; want %s", got, err, final)
		}
	})

	t.Run("ConcurrentChecksOfAnApprovedCallOnePasses", func(t *testing.T) {
		a, b := newPair(t)
		drivers := []*engine.Driver{approvalDriver(t, a, time.Hour), approvalDriver(t, b, time.Hour)}
		res, _ := drivers[0].Check(ctx, trade("req-p", "step-1", 30000))
		if _, err := drivers[1].Decide(ctx, res.Approval.ID, engine.DecisionApprove, "approver", ""); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		allowed := 0
		for i := range 8 {
			wg.Go(func() {
				r, err := drivers[i%2].Check(ctx, trade("req-p", "step-1", 30000))
				if err != nil {
					if rf, ok := engine.AsRefusal(err); ok && rf.Code == engine.RefusedConflict {
						return
					}
					t.Errorf("check %d: %v", i, err)
					return
				}
				if r.Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				} else if r.Denial.Code != engine.DenialApprovalRequired {
					t.Errorf("check %d = %+v; want allowed or approval_required", i, r.Denial)
				}
			})
		}
		wg.Wait()
		if allowed != 1 {
			t.Fatalf("%d concurrent checks of one approved call passed, want exactly 1", allowed)
		}
	})
}
