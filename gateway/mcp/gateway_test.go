package mcp

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

func TestGateway_ListsOnlyToolsAOneStepPlanCouldUse(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	c := h.connect()
	got := c.tools(t)
	// wipe is in the catalog but not in the allow-list; secret is not in the catalog;
	// extra is in both but the upstream does not offer it (yet).
	want := []string{"add", "crash", "echo", "env", "garble", "grow", "noise", "pid", "slow"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("tools/list = %v, want %v", got, want)
	}
	if _, err := h.mem.Get(context.Background(), c.requestID()); err == nil {
		t.Error("listing tools wrote the session's record")
	}
	if st := h.gw.Status(context.Background()).Servers[0]; !slices.Equal(st.Uncataloged, []string{"secret"}) || !slices.Contains(st.Tools, "wipe") {
		t.Errorf("status: tools %v, uncataloged %v; want every offered tool and secret uncataloged", st.Tools, st.Uncataloged)
	}
}

func TestGateway_AllowedCallIsForwardedAndRecorded(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	c := h.connect()
	res := c.call(t, "echo", map[string]any{"message": "hi"})
	if res.IsError || text(res) != "Echo: hi (from local)" {
		t.Fatalf("echo = %+v (%q)", res, text(res))
	}
	if id := res.Meta[metaRequestID]; id != c.requestID() || !strings.HasPrefix(c.requestID(), "mcp-") {
		t.Errorf("request id: _meta %v, header %q", id, c.requestID())
	}
	if res.Meta[metaStepID] != "step-1" {
		t.Errorf("step id = %v, want step-1", res.Meta[metaStepID])
	}
	add := c.call(t, "add", map[string]any{"a": 2, "b": 3})
	if add.IsError || text(add) != "5" {
		t.Fatalf("add = %q", text(add))
	}

	rec := h.waitRecord(c.requestID(), func(n int) bool { return n == 2 }) // results are reported beside the answers
	if rec.Status != engine.RecordRunning || len(rec.Phases) != 2 {
		t.Fatalf("record: status %s, %d phases; want running, 2", rec.Status, len(rec.Phases))
	}
	step := rec.Phases[0].Plan.Steps[0]
	if step.StepID != "step-1" || step.Namespace != "test" || step.AgentName != "local" || step.Capability() != "echo" ||
		step.Metadata["parameters"].(map[string]any)["message"] != "hi" {
		t.Errorf("phase 1 step = %+v", step)
	}
	if r := rec.Phases[1].Results; len(r) != 1 || !r[0].Success || r[0].Response.(map[string]any)["data"].(map[string]any)["sum"] != float64(5) {
		t.Errorf("phase 2 results = %+v", r)
	}
	if rec.Result == nil || len(rec.Result.Steps) != 2 || !rec.Result.Success {
		t.Errorf("combined result = %+v", rec.Result)
	}
	var stages []engine.Stage
	for _, inv := range rec.PipelineHooks {
		stages = append(stages, inv.Phase)
	}
	if want := []engine.Stage{engine.StageAfterPlanning, engine.StageAfterPlanning}; !slices.Equal(stages, want) {
		t.Errorf("invocations by stage = %v, want %v", stages, want)
	}
}

// TestGateway_RefusedCallsNeverReachTheUpstream: a call the review rejects, the guards
// deny, or that names no offered tool is an isError result naming the code, and the
// upstream never sees it.
func TestGateway_RefusedCallsNeverReachTheUpstream(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	for _, c := range []struct {
		name, tool, code string
		args             map[string]any
		recorded         bool
	}{
		{"the review rejects it", "wipe", "capability_not_allowed", nil, true},
		// Offered by the upstream but not a capability in the catalog: plan validation
		// refuses it, and the record keeps the rejected plan.
		{"not in the catalog", "secret", "unknown_capability", nil, true},
		{"another letter case", "Wipe", "unknown_tool", nil, false},
		{"another letter case of an allowed tool", "ECHO", "unknown_tool", nil, false},
		{"a qualified name without a collision", "local__wipe", "unknown_tool", nil, false},
		{"a guard denies it", "echo", "forbidden_message", map[string]any{"message": "forbidden"}, true},
		// The guard reads "message"; a server matching names without regard to case
		// could read the other one.
		{"arguments that differ only by case", "echo", "ambiguous_parameters", map[string]any{"message": "hi", "Message": "forbidden"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := h.connect()
			res := cl.call(t, c.tool, c.args)
			if !res.IsError || refusalCode(res) != c.code || !strings.HasPrefix(text(res), c.code+": ") {
				t.Fatalf("%s = %+v (%q), want isError with code %s", c.tool, res, text(res), c.code)
			}
			_, err := h.mem.Get(context.Background(), cl.requestID())
			if recorded := err == nil; recorded != c.recorded {
				t.Errorf("recorded = %v, want %v (err %v)", recorded, c.recorded, err)
			}
		})
	}
	if calls := h.upstreamCalls(); calls != nil {
		t.Errorf("the upstream saw %v", calls)
	}
}

// TestGateway_RejectedCallRefusesThatCallOnly: the review's rejection is in the
// record and refuses that call; the session's request stays open, so the calls before
// and after it are reviewed and forwarded on their own.
func TestGateway_RejectedCallRefusesThatCallOnly(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	c := h.connect()
	if res := c.call(t, "echo", map[string]any{"message": "first"}); res.IsError {
		t.Fatal(text(res))
	}
	res := c.call(t, "wipe", nil)
	if !res.IsError || res.Meta[metaStepID] != "step-2" || refusalCode(res) != "capability_not_allowed" {
		t.Fatalf("wipe = %+v", res)
	}
	if after := c.call(t, "echo", map[string]any{"message": "after"}); after.IsError || after.Meta[metaStepID] != "step-3" {
		t.Fatalf("a call after the rejection = %+v (%q), want it forwarded as step-3", after, text(after))
	}
	if tools := c.tools(t); !slices.Contains(tools, "echo") || slices.Contains(tools, "wipe") {
		t.Errorf("tools/list after the rejection = %v, want echo and not wipe", tools)
	}
	rec := h.waitRecord(c.requestID(), func(n int) bool { return n == 2 })
	if rec.Status == engine.RecordFailed || len(rec.Phases) != 2 || len(rec.Rejections) != 1 {
		t.Fatalf("record: status %s, %d phases, %d rejections; want not failed, 2, 1", rec.Status, len(rec.Phases), len(rec.Rejections))
	}
	if r := rec.Rejections[0]; r.Phase != 2 || r.Hook != "allowed-operations" || len(r.Violations) != 1 ||
		r.Violations[0].Code != "capability_not_allowed" || r.Plan.Steps[0].StepID != "step-2" || r.Plan.Steps[0].Capability() != "wipe" {
		t.Errorf("the rejection = %+v", r)
	}
	if ops := rec.Operations; len(ops) != 2 || ops[0].StepID != "step-1" || ops[1].StepID != "step-3" ||
		ops[1].Outcome != engine.CheckAllow || ops[1].Finish == nil || ops[1].Finish.Status != engine.RunSucceeded {
		t.Errorf("operations = %+v, want the two echo checks with their finishes", ops)
	}
	if calls := h.upstreamCalls(); len(calls) != 2 || !strings.HasPrefix(calls[1], "local echo ") {
		t.Errorf("the upstream saw %v", calls)
	}
}

// TestGateway_HeldCallPassesOnceApproved: a call a rule with effect require_approval
// holds is refused (isError) naming the approval and its URL, with the approval in
// the refusal's _meta, and never reaches the upstream; sent again before a decision it
// is held again under the same approval; once approved, the same call passes once
// (MCP go-sdk client), and sent again it needs a new approval.
func TestGateway_HeldCallPassesOnceApproved(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	c := h.connect()
	args := map[string]any{"a": 2000000, "b": 3}
	held := c.call(t, "add", args)
	meta, _ := held.Meta[metaRefusal].(map[string]any)
	approval, _ := meta["approval"].(map[string]any)
	id, _ := approval["id"].(string)
	if !held.IsError || refusalCode(held) != engine.DenialApprovalRequired || id == "" || approval["url"] != "/v1/approvals/"+id ||
		!strings.Contains(text(held), id) || !strings.Contains(text(held), "/v1/approvals/"+id) {
		t.Fatalf("held call = %+v (%q); want isError approval_required naming the approval and its URL", held, text(held))
	}
	again := c.call(t, "add", args)
	if again2, _ := again.Meta[metaRefusal].(map[string]any); refusalCode(again) != engine.DenialApprovalRequired || again2["approval"].(map[string]any)["id"] != id || again.Meta[metaStepID] != held.Meta[metaStepID] {
		t.Fatalf("the held call again = %+v; want the same approval on the same step", again.Meta)
	}
	if calls := h.upstreamCalls(); calls != nil {
		t.Fatalf("the upstream saw %v before the approval", calls)
	}
	ctx := context.Background()
	if _, err := h.gw.cfg.Driver.Decide(ctx, id, engine.DecisionApprove, "desk", ""); err != nil {
		t.Fatal(err)
	}
	if other := c.call(t, "add", map[string]any{"a": 2000001, "b": 3}); refusalCode(other) != engine.DenialApprovalRequired {
		t.Fatalf("a call with other arguments = %q; want approval_required", text(other))
	}
	ok := c.call(t, "add", args)
	if ok.IsError || ok.Meta[metaStepID] != held.Meta[metaStepID] {
		t.Fatalf("the approved call = %+v (%q); want it forwarded as the held step", ok, text(ok))
	}
	h.waitUpstreamSaw(`local add {"a":2000000,"b":3}`)
	if next := c.call(t, "add", args); refusalCode(next) != engine.DenialApprovalRequired || next.Meta[metaStepID] == held.Meta[metaStepID] {
		t.Fatalf("the approved call sent again = %+v; want a new approval_required on a new step", next.Meta)
	}
}
