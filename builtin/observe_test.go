package builtin_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// twoStepResult is a successful execution result of two steps.
func twoStepResult() *engine.ExecutionResult {
	return &engine.ExecutionResult{
		PlanID:  "plan-1",
		Success: true,
		Steps: []engine.StepResult{
			{StepID: "step-1", AgentName: "stock-service", Capability: "stock_quote", Success: true, Response: map[string]any{"price": 42.5}},
			{StepID: "step-2", AgentName: "stock-service", Capability: "stock_quote", Success: false, Error: "timeout"},
		},
		PhaseCount: 1,
	}
}

// runExecution runs gen's after_execution stage on result, recording into a fresh trail.
func runExecution(t *testing.T, gen *config.Generation, result *engine.ExecutionResult) []engine.Invocation {
	t.Helper()
	trail := engine.NewTrail()
	gen.Pipeline.AfterExecution(requestCtx(gen, "req-1", noGate), &engine.PipelineContext{Request: "q"}, result, trail)
	return trail.Invocations()
}

func TestEffect_RecordedOnInvocation(t *testing.T) {
	started := time.Date(2025, 6, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	tests := []struct {
		name   string
		steps  string
		want   []engine.Effect
		data   []string // JSON data of each effect, compared semantically
		status engine.InvocationStatus
		errMsg string
	}{
		{
			name: "summary and data",
			steps: `      - effect:
          id: audit
          name: execution audit
          summary: "string(size(result.steps)) + ' steps, success=' + string(result.success)"
          data: "{'failed': result.steps.filter(s, !s.success).map(s, s.step_id), 'price': result.steps[0].response.price}"`,
			want: []engine.Effect{{EffectID: "audit", SchemaVersion: 1, Name: "execution audit", Status: engine.EffectSucceeded, Summary: "2 steps, success=true"}},
			data: []string{`{"failed": ["step-2"], "price": 42.5}`},
		},
		{
			name: "status and no data",
			steps: `      - effect: {id: notify, status: skipped}
      - effect: {id: page, status: pending, data: "null"}`,
			want: []engine.Effect{
				{EffectID: "notify", SchemaVersion: 1, Status: engine.EffectSkipped},
				{EffectID: "page", SchemaVersion: 1, Status: engine.EffectPending},
			},
			data: []string{"", "null"},
		},
		{
			name: "a later report updates the effect",
			steps: `      - effect: {id: job, status: pending, summary: "'queued'"}
      - effect: {id: job, status: partial, summary: "'half done'"}`,
			want: []engine.Effect{{EffectID: "job", SchemaVersion: 1, Status: engine.EffectPartial, Summary: "half done",
				History: []engine.EffectChange{{Status: engine.EffectPending}}}},
			data: []string{""},
		},
		{
			name: "a terminal effect cannot go back to pending",
			steps: `      - effect: {id: job, status: succeeded}
      - effect: {id: job, status: pending}`,
			want:   []engine.Effect{{EffectID: "job", SchemaVersion: 1, Status: engine.EffectSucceeded}},
			data:   []string{""},
			status: engine.InvocationFailed,
			errMsg: "effect update from a terminal status back to pending",
		},
		{
			name:   "data that is not JSON",
			steps:  `      - effect: {id: nan, data: "0.0 / 0.0"}`,
			status: engine.InvocationFailed,
			errMsg: "effect data: json: unsupported value: NaN",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := func() time.Time { return started }
			gen := loadHooks(t, hooks(`hooks:
  - name: execution-audit
    stage: after_execution
    steps:
`+tt.steps+"\n"), config.Options{Services: builtin.Services{Now: now}})
			invs := runExecution(t, gen, twoStepResult())
			wantInvocations(t, invs, 1)
			status, reason := engine.InvocationSucceeded, engine.ReasonCompleted
			if tt.status != "" {
				status, reason = tt.status, engine.ReasonHookError
			}
			wantInvocation(t, invs[0], "execution-audit", status, reason, tt.errMsg)
			got := invs[0].Effects
			if len(got) != len(tt.want) {
				t.Fatalf("effects = %+v, want %+v", got, tt.want)
			}
			for i, e := range got {
				if !jsonEqual(t, e.Data, tt.data[i]) {
					t.Errorf("effect %s data = %s, want %s", e.EffectID, e.Data, tt.data[i])
				}
				if !e.StartedAt.Equal(started) || e.StartedAt.Location() != time.UTC {
					t.Errorf("effect %s started_at = %v, want %v in UTC", e.EffectID, e.StartedAt, started)
				}
				for j, h := range e.History {
					if h.ReplacedAt.IsZero() {
						t.Errorf("effect %s: history entry %d has no time", e.EffectID, j)
					}
					e.History[j].ReplacedAt = time.Time{}
				}
				e.Data, e.StartedAt = nil, time.Time{}
				if !reflect.DeepEqual(e, tt.want[i]) {
					t.Errorf("effect = %+v, want %+v", e, tt.want[i])
				}
			}
		})
	}
}

// With recording off the effect action does nothing and does not fail.
func TestEffect_RecordingOff(t *testing.T) {
	gen := loadHooks(t, hooks(`hooks:
  - name: audit
    stage: after_synthesis
    steps:
      - effect: {id: audit, data: "{'response': response}"}
      - truncate: {max_bytes: 4, suffix: ''}
`))
	got := gen.Pipeline.AfterSynthesis(requestCtx(gen, "req-1", noGate), &engine.PipelineContext{}, "hello", nil)
	if got != "hell" {
		t.Errorf("AfterSynthesis = %q, want the steps after the effect to run", got)
	}
}

// An effect reported by a before_planning hook comes before the hook's automatic
// enrichment effects.
func TestEffect_BeforeEnrichmentEffects(t *testing.T) {
	gen := loadHooks(t, hooks(`hooks:
  - name: ctx
    stage: before_planning
    steps:
      - enrich: {key: rag_context, value: "'docs'"}
      - effect: {id: lookup, summary: "'looked up ' + enrichments.rag_context"}
`))
	r := runBefore(t, gen, "req-1", "q", nil, noGate)
	wantInvocations(t, r.invs, 1)
	var ids []string
	for _, e := range r.invs[0].Effects {
		ids = append(ids, e.EffectID)
	}
	if want := []string{"lookup", "planning_enrichment:rag_context"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("effect ids = %v, want %v", ids, want)
	}
	if s := r.invs[0].Effects[0].Summary; s != "looked up docs" {
		t.Errorf("summary = %q", s)
	}
}

func jsonEqual(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	if want == "" || len(got) == 0 {
		return want == "" && len(got) == 0
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("data %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

// captureHandler is a slog.Handler that keeps every record it handles at or above
// level.
type captureHandler struct {
	level   slog.Level
	mu      sync.Mutex
	records []logRecord
}

type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (h *captureHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	h.records = append(h.records, rec)
	h.mu.Unlock()
	return nil
}

func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *captureHandler) WithGroup(string) slog.Handler      { return h }

func (h *captureHandler) logged() []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]logRecord(nil), h.records...)
}

func TestLog_Lines(t *testing.T) {
	tests := []struct {
		name   string
		stage  string
		params string
		want   []logRecord // attrs other than hook, stage, request_id and generation
	}{
		{
			name:   "info by default",
			stage:  "before_planning",
			params: `{message: "'tenant ' + string(metadata.tenant) + ' asks: ' + request"}`,
			want:   []logRecord{{level: slog.LevelInfo, msg: "tenant acme asks: q?"}},
		},
		{
			name:   "warn",
			stage:  "after_synthesis",
			params: `{message: "'answer of ' + string(size(response)) + ' bytes'", level: warn}`,
			want:   []logRecord{{level: slog.LevelWarn, msg: "answer of 6 bytes"}},
		},
		{
			name:   "error",
			stage:  "after_execution",
			params: `{message: "'success=' + string(result.success)", level: error}`,
			want:   []logRecord{{level: slog.LevelError, msg: "success=true"}},
		},
		{
			// A disabled level is not evaluated, so its message cannot fail the hook.
			name:   "a disabled level is skipped",
			stage:  "after_planning",
			params: `{message: "string(metadata.missing)", level: debug}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &captureHandler{level: slog.LevelInfo}
			gen := loadHooks(t, hooks(catalogYAML, `hooks:
  - name: logger
    stage: `+tt.stage+`
    steps:
      - log: `+tt.params+"\n"), config.Options{Services: builtin.Services{Logger: slog.New(h)}})
			ctx := requestCtx(gen, "req-9", noGate)
			pctx := &engine.PipelineContext{Request: "q?", Metadata: map[string]any{"tenant": "acme"}, Enrichments: map[string]any{}}
			trail := engine.NewTrail()
			switch engine.Stage(tt.stage) {
			case engine.StageBeforePlanning:
				_, _ = gen.Pipeline.BeforePlanning(ctx, pctx, noGate, trail)
			case engine.StageAfterPlanning:
				_, _ = gen.Pipeline.AfterPlanning(ctx, pctx, quotePlan(1), nil, trail)
			case engine.StageAfterExecution:
				gen.Pipeline.AfterExecution(ctx, pctx, twoStepResult(), trail)
			case engine.StageAfterSynthesis:
				gen.Pipeline.AfterSynthesis(ctx, pctx, "answer", trail)
			}
			invs := trail.Invocations()
			wantInvocations(t, invs, 1)
			if invs[0].Status != engine.InvocationSucceeded {
				t.Errorf("invocation = %+v, want succeeded", invs[0])
			}
			// The pipeline logs nothing itself when hooks succeed, so every line is
			// the action's.
			got := h.logged()
			if len(got) != len(tt.want) {
				t.Fatalf("logged %+v, want %+v", got, tt.want)
			}
			for i, rec := range got {
				wantAttrs := map[string]string{"hook": "logger", "stage": tt.stage, "request_id": "req-9", "generation": gen.ID}
				if rec.level != tt.want[i].level || rec.msg != tt.want[i].msg || !reflect.DeepEqual(rec.attrs, wantAttrs) {
					t.Errorf("record = %+v, want %v %q %v", rec, tt.want[i].level, tt.want[i].msg, wantAttrs)
				}
			}
		})
	}
}

// A message that fails to evaluate is a hook error and logs nothing.
func TestLog_EvalErrorFailsOpen(t *testing.T) {
	h := &captureHandler{level: slog.LevelInfo}
	gen := loadHooks(t, hooks(`hooks:
  - name: logger
    stage: after_synthesis
    steps:
      - log: {message: "string(metadata.missing)", level: error}
`), config.Options{Services: builtin.Services{Logger: slog.New(h)}, Logger: slog.New(slog.DiscardHandler)})
	got, invs := runSynthesis(t, gen, requestCtx(gen, "req-1", noGate), "q", nil, "answer")
	if got != "answer" {
		t.Errorf("AfterSynthesis = %q", got)
	}
	wantInvocation(t, invs[0], "logger", engine.InvocationFailed, engine.ReasonHookError, "log message: ")
	if recs := h.logged(); len(recs) != 0 {
		t.Errorf("logged %+v, want nothing", recs)
	}
}
