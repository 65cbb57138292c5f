package shadow_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/cmd/agentd/internal/shadow"
	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/decisionlog"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/internal/stocktest"
)

type emitted struct {
	mu     sync.Mutex
	events []*decisionlog.Event
}

func (e *emitted) emit(ev *decisionlog.Event, _ string) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

// wait returns the events once there are n: a disagreement is counted before it is
// emitted.
func (e *emitted) wait(t *testing.T, n int) []*decisionlog.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.mu.Lock()
		got := slices.Clone(e.events)
		e.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events emitted, want %d", len(got), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fixture is a driver on the live stock agent with a shadow on dir beside it.
type fixture struct {
	driver *engine.Driver
	shadow *shadow.Shadow
	events *emitted
}

func newFixture(t *testing.T, shadowDir string) *fixture {
	t.Helper()
	mem := store.NewMemory(store.MemoryOptions{})
	gen := stocktest.Load(t, config.Options{Services: builtin.Services{Cache: mem, Limiter: mem}})
	live := reload.NewRegistry(2)
	live.Swap(gen)
	events := &emitted{}
	sh, err := shadow.New(context.Background(), shadow.Config{Dir: shadowDir, Live: live, Emit: events.emit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	d, err := engine.NewDriver(engine.DriverConfig{Generations: live, States: mem, Records: mem, Observer: sh})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{driver: d, shadow: sh, events: events}
}

// settled waits until the shadow has looked at n calls.
func (f *fixture) settled(t *testing.T, n int64) *shadow.Summary {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := f.shadow.Summary()
		if s.Evaluated+s.Skipped >= n {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shadow looked at %d+%d calls, want %d", s.Evaluated, s.Skipped, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func tradePlan(amount float64) *engine.RoutingPlan {
	return &engine.RoutingPlan{PlanID: "p1", Steps: []engine.RoutingStep{{StepID: "step-1", AgentName: "broker", Namespace: "demo-tools",
		Instruction: "buy", Metadata: map[string]any{"capability": "execute_trade", "parameters": map[string]any{"amount": amount}}}}}
}

// A stricter shadow changes no live answer; it reports the plan and the check it would
// have denied, under the live decisions' ids.
func TestShadow_ReportsWhatAStricterConfigWouldDeny(t *testing.T) {
	f := newFixture(t, stocktest.Dir(t, stocktest.Stricter...))
	ctx := context.Background()
	s, err := f.driver.Open(ctx, "r1", engine.Opening{Text: "buy ACME", Metadata: map[string]any{"tenant": "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeforePlanning(ctx); err != nil {
		t.Fatal(err)
	}
	planned, err := s.AfterPlanning(ctx, tradePlan(8000), 0)
	if err != nil {
		t.Fatalf("live review of the trade: %v", err)
	}
	checked, err := f.driver.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: "r1", StepID: "step-1", Namespace: "demo-tools",
		AgentName: "broker", Capability: "execute_trade", Parameters: map[string]any{"amount": 8000.0}})
	if err != nil || !checked.Allowed {
		t.Fatalf("live check: %+v, %v", checked, err)
	}
	sum := f.settled(t, 3)
	if sum.Agreed != 1 || sum.Disagreed != 2 || sum.Changes[compare.NewlyDenied] != 2 {
		t.Fatalf("summary %+v: want before_planning agreed, the plan and the check newly denied", sum)
	}
	ids := map[string]bool{}
	for _, e := range f.events.wait(t, 2) {
		ids[e.DecisionID] = true
		if e.Kind != config.EventShadow || e.Shadow.Change != compare.NewlyDenied || e.Shadow.Generation != sum.Generation {
			t.Errorf("event %+v", e)
		}
	}
	if !ids[planned.DecisionID] || !ids[checked.DecisionID] {
		t.Errorf("events name decisions %v, want the plan's %s and the check's %s", ids, planned.DecisionID, checked.DecisionID)
	}
	if v := sum.Recent[0].Shadow; v.Denial == nil || v.Denial.Code != "trade_limit" {
		t.Errorf("the latest disagreement's shadow verdict is %+v, want trade_limit", v)
	}
}

// An answer from the cache is not the rules': the shadow, whose cache never answers,
// skips it rather than report a disagreement.
func TestShadow_SkipsCachedAnswers(t *testing.T) {
	f := newFixture(t, stocktest.Dir(t))
	ctx := context.Background()
	for i, id := range []string{"c1", "c2"} {
		s, err := f.driver.Open(ctx, id, engine.Opening{Text: "quote ACME"})
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.BeforePlanning(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if (out.ShortCircuit != nil) != (i == 1) {
			t.Fatalf("request %s: short circuit %v", id, out.ShortCircuit)
		}
		if i == 0 { // a reviewed answer is cached
			quote := &engine.RoutingPlan{PlanID: "q", Steps: []engine.RoutingStep{{StepID: "step-1", AgentName: "stock-service",
				Namespace: "demo-tools", Instruction: "quote", Metadata: map[string]any{"capability": "stock_quote"}}}}
			if _, err := s.AfterPlanning(ctx, quote, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AfterSynthesis(ctx, "182.50 USD"); err != nil {
				t.Fatal(err)
			}
		}
	}
	sum := f.settled(t, 4)
	if sum.Agreed != 3 || sum.Skipped != 1 || sum.Disagreed != 0 {
		t.Fatalf("summary %+v: want the first request's calls agreed and the cached answer skipped", sum)
	}
}

// A shadow that redacts less rewrites the same draft otherwise: the live answer stays
// redacted, and the disagreement names the responses by digest only.
func TestShadow_ReportsAnotherRedaction(t *testing.T) {
	f := newFixture(t, stocktest.Dir(t, stocktest.Edit{File: "hooks/30-response.yaml",
		Old: "patterns: [email, credit_card, phone]", New: "patterns: [email, credit_card]"}))
	ctx := context.Background()
	s, err := f.driver.Open(ctx, "r1", engine.Opening{Text: "who do I call?", Metadata: map[string]any{"tenant": "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	const draft = "call +1 415 555 0100"
	out, err := s.AfterSynthesis(ctx, draft)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Response, "415") {
		t.Fatalf("live answer %q: want the phone number redacted", out.Response)
	}
	sum := f.settled(t, 1)
	if sum.Disagreed != 1 || sum.Changes[compare.Changed] != 1 {
		t.Fatalf("summary %+v: want one changed disagreement", sum)
	}
	d := sum.Recent[0]
	if d.Stage != engine.StageAfterSynthesis || d.DecisionID != out.DecisionID || d.Live.Response.Length != len(out.Response) ||
		d.Shadow.Response.Length != len(draft) || d.Live.Response.HMAC == d.Shadow.Response.HMAC {
		t.Fatalf("disagreement %+v: want after_synthesis of %s, live and shadow responses told apart", d, out.DecisionID)
	}
	for _, v := range []any{sum, f.events.wait(t, 1)[0]} {
		encoded, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		// "415 555" rather than "415": a hex digest or decision id may hold the digits.
		if strings.Contains(string(encoded), "415 555") || strings.Contains(string(encoded), "REDACTED") {
			t.Errorf("%s holds a response's text", encoded)
		}
	}
}
