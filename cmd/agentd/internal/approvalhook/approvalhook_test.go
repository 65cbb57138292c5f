package approvalhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// receiver is a webhook endpoint that answers its first `failures` tries 503 and
// keeps the bodies and signatures of the rest.
type receiver struct {
	mu       sync.Mutex
	failures int
	tries    int
	bodies   [][]byte
	sigs     []string
	got      chan struct{}
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries++
	if r.tries <= r.failures {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	r.bodies, r.sigs = append(r.bodies, body), append(r.sigs, req.Header.Get("X-Agentd-Signature"))
	r.got <- struct{}{}
}

// A check that opens an approval is announced once, signed, after two failed tries;
// the same call held again (the same approval) and an allowed call announce nothing.
func TestNotifier_AnnouncesNewPendingApprovalsSignedWithRetries(t *testing.T) {
	rcv := &receiver{failures: 2, got: make(chan struct{}, 4)}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	to := &config.ApprovalNotify{URL: srv.URL + "/hook", SecretEnv: "SECRET", Secret: "s3cret"}
	n := New(func() *config.ApprovalNotify { return to }, Options{Backoff: time.Millisecond})
	runner, err := op.Compile(op.Set{PolicyRevision: "r", Guards: []op.Guard{{Name: "limit", Operations: []op.Operation{op.ToolCall},
		Check: func(ctx context.Context, c op.Call) error {
			if c.Parameters["amount"].(float64) > 10 {
				return engine.RequireApproval(ctx, engine.ApprovalAsk{Rule: "limit", Code: "big", Reason: "needs approval"})
			}
			return nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	mem := store.NewMemory(store.MemoryOptions{})
	d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &engine.Generation{ID: "g", Runner: runner, PolicyRevision: "r", Binding: engine.BindingOff}},
		States: mem, Observer: n})
	if err != nil {
		t.Fatal(err)
	}
	call := func(amount float64) *engine.CheckResult {
		res, err := d.Check(context.Background(), op.Call{Operation: op.ToolCall, RequestID: "r1", StepID: "s1", Namespace: "n", AgentName: "a",
			Capability: "trade", Parameters: map[string]any{"amount": amount}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	held := call(20)
	call(20)
	call(5)
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.tries != 3 || len(rcv.bodies) != 1 {
		t.Fatalf("%d tries, %d delivered; want 3 tries (two failed), 1 delivered", rcv.tries, len(rcv.bodies))
	}
	if want := Sign("s3cret", rcv.bodies[0]); rcv.sigs[0] != want {
		t.Errorf("signature %q, want %q", rcv.sigs[0], want)
	}
	var p Payload
	if err := json.Unmarshal(rcv.bodies[0], &p); err != nil {
		t.Fatal(err)
	}
	if p.Event != Event || p.Approval.ID != held.Approval.ID || p.Approval.Status != engine.ApprovalPending || p.Approval.URL != "/v1/approvals/"+held.Approval.ID ||
		p.Approval.Parameters["amount"] != 20.0 || p.Approval.Rule != "limit" {
		t.Errorf("payload = %+v", p)
	}
}

// A full queue drops the announcement rather than holding the check, and nothing
// is sent after Close.
func TestNotifier_BoundedQueueDropsAndCloseStops(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	to := &config.ApprovalNotify{URL: srv.URL, Secret: "x"}
	n := New(func() *config.ApprovalNotify { return to }, Options{Queue: 1, Attempts: 1, Timeout: 50 * time.Millisecond})
	report := func(id string) *engine.CheckReport {
		return &engine.CheckReport{DecisionID: id, Approval: &engine.Approval{ID: "apr_" + id, Status: engine.ApprovalPending, DecisionID: id}}
	}
	for _, id := range []string{"d1", "d2", "d3", "d4"} {
		n.Checked(context.Background(), report(id)) // returns at once, queue or not
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.Checked(context.Background(), report("d5")) // after Close: ignored, no panic
}
