package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/cmd/agentd/internal/replay"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/decisionlog"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// tenantConfig writes a config whose required plan review denies a plan of a tenant
// the data does not list (input.metadata.tenant) and whose guard denies a silver
// member's booking call (metadata.loyalty_tier); extra hooks run before the required
// one.
func tenantConfig(t *testing.T, extra string) *config.Generation {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"hooks/plan.yaml": `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: plan}
catalog:
  - namespace: travel
    agent: booker
    capabilities: [{name: book}]
hooks:
` + extra + `  - name: tenants
    stage: after_planning
    required: true
    steps:
      - rego: {query: data.agentd.plan}
guards:
  policy_revision: r1
  rules:
    - operation: tool_call
      deny_if: "has(metadata.loyalty_tier) && metadata.loyalty_tier == 'silver' && call.capability == 'book'"
      code: tier_limit
      reason: silver members book through an agent
`,
		"policies/agentd/plan.rego": "package agentd.plan\n\ndeny contains {\"code\": \"unknown_tenant\", \"message\": \"no such tenant\"} if not data.agentd.tenants[input.metadata.tenant]\n",
		"data/agentd/tenants.json":  `{"tenants": {"acme": true}}`,
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen, err := config.Load(dir, inert)
	if err != nil {
		t.Fatal(err)
	}
	return gen
}

// daemonRecords runs requests of three tenants through gen on a driver, each planning
// one booking and calling its booking agent, and returns their execution records.
func daemonRecords(t *testing.T, gen *config.Generation) []*engine.ExecutionRecord {
	t.Helper()
	mem := store.NewMemory(store.MemoryOptions{})
	d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &gen.Generation}, States: mem, Records: mem})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out []*engine.ExecutionRecord
	for id, meta := range map[string]map[string]any{
		"gold-acme":   {"tenant": "acme", "loyalty_tier": "gold"},
		"silver-acme": {"tenant": "acme", "loyalty_tier": "silver"},
		"other":       {"tenant": "globex"},
	} {
		s, err := d.Open(ctx, id, engine.Opening{Text: "book a flight", Metadata: meta})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.BeforePlanning(ctx); err != nil {
			t.Fatal(err)
		}
		_, _ = s.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p", Steps: []engine.RoutingStep{{StepID: "step-1", Namespace: "travel", AgentName: "booker",
			Instruction: "book", Metadata: map[string]any{"capability": "book", "parameters": map[string]any{}}}}}, 0)
		call := op.Call{Operation: op.ToolCall, RequestID: id, StepID: "step-1", Namespace: "travel", AgentName: "booker", Capability: "book", Parameters: map[string]any{}}
		if res, err := d.Check(ctx, call); id != "other" && (err != nil || res.Allowed != (id == "gold-acme")) {
			t.Fatalf("%s: check %+v, %v", id, res, err)
		}
		rec, err := mem.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

// Records keep the request's metadata, so replaying a daemon's own records against its
// unchanged config changes nothing even though its plan policy and guards read
// metadata; a record without metadata (written before records kept it) is refused,
// not reported as newly denied.
func TestRun_RecordsKeepMetadata(t *testing.T) {
	gen := tenantConfig(t, "")
	recs := daemonRecords(t, gen)
	set, err := replay.Read(strings.NewReader(encode(t, recs)))
	if err != nil {
		t.Fatal(err)
	}
	res := replay.Run(context.Background(), gen, set)
	if res.Changed() || res.Plans != 3 || res.Checks != 2 || res.Unchanged != 5 || len(res.Skips) != 0 {
		t.Fatalf("replay of the daemon's own records: %+v, want 5 unchanged (3 plans, 2 checks) and none skipped", res)
	}
	for _, r := range recs {
		r.Metadata = nil
	}
	set, err = replay.Read(strings.NewReader(encode(t, recs)))
	if err != nil {
		t.Fatal(err)
	}
	res = replay.Run(context.Background(), gen, set)
	if res.Changed() || res.Unchanged != 0 {
		t.Fatalf("records without metadata: %+v, want every decision refused", res)
	}
	if len(res.Skips) != 5 {
		t.Errorf("skips %+v, want 5", res.Skips)
	}
	for _, s := range res.Skips {
		if !strings.Contains(s.Reason, "may read metadata, which the source did not keep") {
			t.Errorf("skip %+v does not say the source lacks metadata", s)
		}
	}
}

// Records keep no enrichments: a candidate whose plan review may read them has the
// records' plan reviews refused, naming the hooks and what they read, while the checks
// (guards see no enrichments) are replayed.
func TestRun_RecordsLackEnrichments(t *testing.T) {
	recs := daemonRecords(t, tenantConfig(t, ""))
	set, err := replay.Read(strings.NewReader(encode(t, recs)))
	if err != nil {
		t.Fatal(err)
	}
	candidate := tenantConfig(t, `  - name: context
    stage: after_planning
    when: "has(enrichments.rag_context)"
    steps:
      - rego: {query: data.agentd.plan}
`)
	res := replay.Run(context.Background(), candidate, set)
	if res.Changed() || res.Plans != 0 || res.Checks != 2 || len(res.Skips) != 3 {
		t.Fatalf("%+v, want the 3 plan reviews refused and 2 checks replayed", res)
	}
	for _, s := range res.Skips {
		if s.Reason != "the candidate's after_planning hooks may read enrichments, which the source did not keep" {
			t.Errorf("skip reason %q", s.Reason)
		}
	}
}

// Replay rebuilds no request's labels or history: a candidate whose guards may read
// them has the records' checks refused, naming what they read, while the plan reviews
// (which do not read the flow) are replayed.
func TestRun_CandidateReadingTheFlowIsRefused(t *testing.T) {
	recs := daemonRecords(t, tenantConfig(t, ""))
	set, err := replay.Read(strings.NewReader(encode(t, recs)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ rule, reads string }{
		{`"'secret' in labels && call.capability == 'book'"`, "labels"},
		{`"history.exists(h, h.capability == 'book')"`, "history"},
	} {
		dir := tenantConfig(t, "").Dir
		if err := os.WriteFile(filepath.Join(dir, "hooks", "flow.yaml"), []byte(`apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: flow}
labels:
  - {label: secret, when: "call.capability == 'book'"}
guards:
  policy_revision: r1
  rules:
    - operation: tool_call
      deny_if: `+tc.rule+`
      code: flow
      reason: flow
`), 0o644); err != nil {
			t.Fatal(err)
		}
		candidate, err := config.Load(dir, inert)
		if err != nil {
			t.Fatal(err)
		}
		res := replay.Run(context.Background(), candidate, set)
		if res.Changed() || res.Plans != 3 || res.Checks != 0 || len(res.Skips) != 2 {
			t.Fatalf("guards reading %s: %+v, want the 2 checks refused and 3 plan reviews replayed", tc.reads, res)
		}
		for _, s := range res.Skips {
			if s.Reason != "the candidate's guards may read "+tc.reads+", which replay does not rebuild" {
				t.Errorf("skip reason %q", s.Reason)
			}
		}
	}
}

// A decision log's events replay with the metadata they carry; an event whose masks
// erased part of the metadata the candidate may read is refused, naming the mask,
// rather than reported as newly denied.
func TestRun_DecisionLogMaskedMetadataIsRefused(t *testing.T) {
	gen := tenantConfig(t, "")
	plan := &engine.RoutingPlan{PlanID: "p1", PhaseNumber: 1, Steps: []engine.RoutingStep{{StepID: "step-1", Namespace: "travel", AgentName: "booker",
		Instruction: "book", Metadata: map[string]any{"capability": "book", "parameters": map[string]any{}}}}}
	at := time.Now().UTC()
	event := func(id string, meta map[string]any, erased ...string) string {
		return encode(t, decisionlog.Event{SchemaVersion: 1, Kind: "stage", DecisionID: id, Timestamp: at, RequestID: id, Stage: engine.StageAfterPlanning,
			Outcome: "accepted", Input: map[string]any{"request": "book", "metadata": meta, "plan": plan}, Output: map[string]any{"accepted_plan": plan}, Erased: erased})
	}
	set, err := replay.Read(strings.NewReader(event("kept", map[string]any{"tenant": "acme"}) + "\n" + event("masked", map[string]any{}, "metadata.tenant")))
	if err != nil {
		t.Fatal(err)
	}
	res := replay.Run(context.Background(), gen, set)
	if res.Changed() || res.Unchanged != 1 || len(res.Skips) != 1 || res.Skips[0].DecisionID != "masked" ||
		res.Skips[0].Reason != "the candidate's after_planning hooks may read metadata, which the source masked (metadata.tenant)" {
		t.Fatalf("%+v, want the kept event unchanged and the masked one refused", res)
	}
}
