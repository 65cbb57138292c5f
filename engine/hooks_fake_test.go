package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// Test doubles shared by the stage tests. Each fake takes part in exactly one stage (a
// hook takes part in a stage by implementing its interface); a nil func field means "do
// nothing and succeed". calls counts invocations; stage runners call hooks one at a
// time, so the counter needs no lock.

// legacyHook is a BeforePlanningHook.
type legacyHook struct {
	name  string
	fn    func(ctx context.Context, pctx *engine.PipelineContext) (*engine.ShortCircuit, error)
	calls int
}

func (h *legacyHook) Name() string { return h.name }

func (h *legacyHook) BeforePlanning(ctx context.Context, pctx *engine.PipelineContext) (*engine.ShortCircuit, error) {
	h.calls++
	if h.fn == nil {
		return nil, nil
	}
	return h.fn(ctx, pctx)
}

// decisionHook is a BeforePlanningDecisionHook.
type decisionHook struct {
	name  string
	fn    func(ctx context.Context, pctx *engine.PipelineContext, gate engine.Gate) (*engine.ShortCircuitDecision, error)
	calls int
}

func (h *decisionHook) Name() string { return h.name }

func (h *decisionHook) BeforePlanningDecision(ctx context.Context, pctx *engine.PipelineContext, gate engine.Gate) (*engine.ShortCircuitDecision, error) {
	h.calls++
	if h.fn == nil {
		return nil, nil
	}
	return h.fn(ctx, pctx, gate)
}

// planHook is an optional AfterPlanningHook; with a nil fn it returns the plan it got.
type planHook struct {
	name  string
	fn    func(ctx context.Context, pctx *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error)
	calls int
	seen  []*engine.RoutingPlan
}

func (h *planHook) Name() string { return h.name }

func (h *planHook) AfterPlanning(ctx context.Context, pctx *engine.PipelineContext, plan *engine.RoutingPlan) (*engine.RoutingPlan, error) {
	h.calls++
	h.seen = append(h.seen, plan)
	if h.fn == nil {
		return plan, nil
	}
	return h.fn(ctx, pctx, plan)
}

// requiredHook is the required (fail-closed) after-planning hook.
type requiredHook struct{ planHook }

func (*requiredHook) RequireAfterPlanningSuccess() {}

// markerOnly declares required intent without the after_planning method (stage drift).
type markerOnly struct{ name string }

func (h *markerOnly) Name() string               { return h.name }
func (*markerOnly) RequireAfterPlanningSuccess() {}

// executionHook is an AfterExecutionHook.
type executionHook struct {
	name  string
	fn    func(ctx context.Context, pctx *engine.PipelineContext, result *engine.ExecutionResult) error
	calls int
	seen  []*engine.ExecutionResult
}

func (h *executionHook) Name() string { return h.name }

func (h *executionHook) AfterExecution(ctx context.Context, pctx *engine.PipelineContext, result *engine.ExecutionResult) error {
	h.calls++
	h.seen = append(h.seen, result)
	if h.fn == nil {
		return nil
	}
	return h.fn(ctx, pctx, result)
}

// synthesisHook is an AfterSynthesisHook; with a nil fn it returns the response as is.
type synthesisHook struct {
	name  string
	fn    func(ctx context.Context, pctx *engine.PipelineContext, response string) (string, error)
	calls int
	seen  []string
}

func (h *synthesisHook) Name() string { return h.name }

func (h *synthesisHook) AfterSynthesis(ctx context.Context, pctx *engine.PipelineContext, response string) (string, error) {
	h.calls++
	h.seen = append(h.seen, response)
	if h.fn == nil {
		return response, nil
	}
	return h.fn(ctx, pctx, response)
}

// idleHook takes part in no stage.
type idleHook struct{ name string }

func (h *idleHook) Name() string { return h.name }

// Compile-time proof that each fake takes part in the stage it is meant for.
var (
	_ engine.BeforePlanningHook         = (*legacyHook)(nil)
	_ engine.BeforePlanningDecisionHook = (*decisionHook)(nil)
	_ engine.AfterPlanningHook          = (*planHook)(nil)
	_ engine.AfterPlanningHook          = (*requiredHook)(nil)
	_ engine.RequiredAfterPlanningHook  = (*requiredHook)(nil)
	_ engine.RequiredAfterPlanningHook  = (*markerOnly)(nil)
	_ engine.AfterExecutionHook         = (*executionHook)(nil)
	_ engine.AfterSynthesisHook         = (*synthesisHook)(nil)
)

// panicToken is a unique panic value: tests compare recovered values by pointer
// identity, and its String makes the recorded text predictable.
type panicToken struct{ label string }

func (p *panicToken) String() string { return p.label }

// mustNew builds a pipeline or fails the test.
func mustNew(t testing.TB, hooks []engine.Hook, opts ...engine.Option) *engine.Pipeline {
	t.Helper()
	p, err := engine.New(hooks, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// newPctx returns a context with empty, non-nil maps.
func newPctx() *engine.PipelineContext {
	return &engine.PipelineContext{Request: "what is the weather?", Metadata: map[string]any{}, Enrichments: map[string]any{}}
}

// decision is a DecisionRecord literal helper.
// failureCause is the cause a failure recorded with a reason gets when the hook's error
// is a plain error (the fakes return no other kind).
var failureCause = map[engine.Reason]engine.Cause{
	engine.ReasonHookError: engine.CauseHookError, engine.ReasonCloneFailed: engine.CauseCloneFailed,
	engine.ReasonInvalidType: engine.CauseInvalidType, engine.ReasonInvalidPlan: engine.CauseInvalidPlan,
	engine.ReasonPanic: engine.CausePanic, engine.ReasonMissingPayload: engine.CauseContractError,
	engine.ReasonUnknownKind: engine.CauseContractError,
}

func decision(policy engine.FailurePolicy, action engine.Action, reason engine.Reason) engine.DecisionRecord {
	return engine.DecisionRecord{FailurePolicy: policy, Action: action, Reason: reason, Cause: failureCause[reason]}
}

// checkInvocation asserts the identifying and outcome fields of one record.
func checkInvocation(t *testing.T, got engine.Invocation, hook string, stage engine.Stage, seq int, status engine.InvocationStatus, want engine.DecisionRecord, errText string) {
	t.Helper()
	if got.HookName != hook || got.Phase != stage || got.Sequence != seq || got.Status != status || got.Error != errText {
		t.Errorf("invocation = {hook %q, phase %q, seq %d, status %q, error %q}, want {%q, %q, %d, %q, %q}",
			got.HookName, got.Phase, got.Sequence, got.Status, got.Error, hook, stage, seq, status, errText)
	}
	if got.Decision == nil {
		t.Errorf("invocation %q: decision not recorded, want %+v", got.HookName, want)
	} else if *got.Decision != want {
		t.Errorf("invocation %q: decision = %+v, want %+v", got.HookName, *got.Decision, want)
	}
}

// hookNames lists the hook names of invocations in order.
func hookNames(invs []engine.Invocation) []string {
	names := make([]string, len(invs))
	for i, inv := range invs {
		names[i] = inv.HookName
	}
	return names
}

// catchPanic runs fn and returns the value it panicked with (nil when it returned).
func catchPanic(fn func()) (value any) {
	defer func() { value = recover() }()
	fn()
	return nil
}

// logRecorder is a slog.Handler that keeps every record.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// warnings returns the "hook" attribute of every warning, in order.
func (h *logRecorder) warnings() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var hooks []string
	for _, r := range h.records {
		if r.Level != slog.LevelWarn {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "hook" {
				hooks = append(hooks, a.Value.String())
			}
			return true
		})
	}
	return hooks
}

// testCatalog lists the agents the test plans use: tools/weather (forecast returns
// temp and wind; alerts declares no returns) and tools/notify (send).
func testCatalog(t testing.TB) *engine.Catalog {
	t.Helper()
	c, err := engine.NewCatalog([]engine.CatalogAgent{
		{Namespace: "tools", Agent: "weather", Capabilities: []engine.Capability{
			{Name: "forecast", Returns: []string{"temp", "wind"}},
			{Name: "alerts"},
		}},
		{Namespace: "tools", Agent: "notify", Capabilities: []engine.Capability{{Name: "send"}}},
	})
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	return c
}

// threeStepPlan is a valid plan against testCatalog: step-1 forecast, step-2 alerts
// after step-1, step-3 sends step-1's temperature after both.
func threeStepPlan() *engine.RoutingPlan {
	return &engine.RoutingPlan{
		PlanID:          "plan-1",
		OriginalRequest: "what is the weather?",
		Mode:            engine.ModeAutonomous,
		CreatedAt:       time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		PhaseNumber:     1,
		Steps: []engine.RoutingStep{
			{StepID: "step-1", AgentName: "weather", Namespace: "tools", Instruction: "forecast",
				Metadata: map[string]any{"capability": "forecast", "parameters": map[string]any{"city": "Oslo", "days": float64(2)}}},
			{StepID: "step-2", AgentName: "weather", Namespace: "tools", Instruction: "alerts", DependsOn: []string{"step-1"},
				Metadata: map[string]any{"capability": "alerts", "parameters": map[string]any{"region": []any{"north", "west"}}}},
			{StepID: "step-3", AgentName: "notify", Namespace: "tools", Instruction: "send", DependsOn: []string{"step-1", "step-2"},
				Metadata: map[string]any{"capability": "send", "parameters": map[string]any{
					"text": "It will be {{step-1.response.data.temp}} degrees",
				}}},
		},
	}
}

// mustClone deep-copies plan or fails the test.
func mustClone(t testing.TB, plan *engine.RoutingPlan) *engine.RoutingPlan {
	t.Helper()
	c, err := engine.ClonePlan(plan)
	if err != nil {
		t.Fatalf("ClonePlan: %v", err)
	}
	return c
}

// Lifecycle collaborators for the tests that cross stage boundaries.

type planFunc func(ctx context.Context, pctx *engine.PipelineContext, history []engine.PhaseRecord) (*engine.RoutingPlan, error)

func (f planFunc) Plan(ctx context.Context, pctx *engine.PipelineContext, history []engine.PhaseRecord) (*engine.RoutingPlan, error) {
	return f(ctx, pctx, history)
}

type executeFunc func(ctx context.Context, step engine.RoutingStep, done []engine.StepResult) (any, error)

func (f executeFunc) Execute(ctx context.Context, step engine.RoutingStep, done []engine.StepResult) (any, error) {
	return f(ctx, step, done)
}

type synthesizeFunc func(ctx context.Context, pctx *engine.PipelineContext, result *engine.ExecutionResult) (string, error)

func (f synthesizeFunc) Synthesize(ctx context.Context, pctx *engine.PipelineContext, result *engine.ExecutionResult) (string, error) {
	return f(ctx, pctx, result)
}

// eventLog records the order of lifecycle events across collaborators and hooks.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf(format, args...))
}

func (l *eventLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// newDriver returns a driver over one generation of p and runner, writing records to
// records (nil keeps them in the session).
func newDriver(t testing.TB, p *engine.Pipeline, runner *op.Runner, records engine.RecordStore) *engine.Driver {
	t.Helper()
	d, err := engine.NewDriver(engine.DriverConfig{
		Generations: engine.Fixed{Gen: &engine.Generation{ID: "gen-test", Pipeline: p, Runner: runner}},
		Records:     records,
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// memoryDriver is a driver over gens whose request states and records one memory store
// keeps.
func memoryDriver(t testing.TB, gens engine.Generations) (*engine.Driver, *store.Memory) {
	t.Helper()
	mem := store.NewMemory(store.MemoryOptions{})
	d, err := engine.NewDriver(engine.DriverConfig{Generations: gens, States: mem, Records: mem})
	if err != nil {
		t.Fatal(err)
	}
	return d, mem
}

// recordingLifecycle returns a lifecycle over p whose planner serves plans in turn and
// whose executor and synthesizer log to log; records go to records (nil: kept in the
// session).
func recordingLifecycle(t testing.TB, p *engine.Pipeline, records engine.RecordStore, log *eventLog, plans ...*engine.RoutingPlan) *engine.Lifecycle {
	return &engine.Lifecycle{
		Driver: newDriver(t, p, nil, records),
		Planner: planFunc(func(_ context.Context, _ *engine.PipelineContext, history []engine.PhaseRecord) (*engine.RoutingPlan, error) {
			log.add("plan %d", len(history)+1)
			if len(history) >= len(plans) {
				return nil, fmt.Errorf("no plan for phase %d", len(history)+1)
			}
			return plans[len(history)], nil
		}),
		Executor: executeFunc(func(_ context.Context, step engine.RoutingStep, _ []engine.StepResult) (any, error) {
			log.add("execute %s", step.StepID)
			return map[string]any{"data": map[string]any{"temp": float64(21)}}, nil
		}),
		Synthesizer: synthesizeFunc(func(context.Context, *engine.PipelineContext, *engine.ExecutionResult) (string, error) {
			log.add("synthesize")
			return "draft", nil
		}),
	}
}

// putLog is a RecordStore that keeps every revision written, JSON round-tripped so no
// stored revision aliases the writer's state.
type putLog struct {
	mu   sync.Mutex
	revs []*engine.ExecutionRecord
}

func (s *putLog) Put(_ context.Context, rec *engine.ExecutionRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	var c engine.ExecutionRecord
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revs = append(s.revs, &c)
	return nil
}

func (s *putLog) Get(context.Context, string) (*engine.ExecutionRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.revs) == 0 {
		return nil, engine.ErrRecordNotFound
	}
	return engine.CopyRecord(s.revs[len(s.revs)-1]), nil
}

func (s *putLog) all() []*engine.ExecutionRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*engine.ExecutionRecord(nil), s.revs...)
}
