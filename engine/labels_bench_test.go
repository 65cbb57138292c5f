package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// flowGuards are the tool_call guards of BenchmarkCheck_Labels, CEL deny_if rules
// evaluated as a config's are: one over the request's labels, one over its history.
var flowGuards = []string{
	`'secret' in labels && call.capability == 'send_email' && !string(call.parameters.to).endsWith('@acme.example')`,
	`call.capability == 'update_settings' && history.exists(h, h.capability == 'fetch_url' && 'untrusted' in h.labels)`,
}

// historyGuards are flowGuards with the history rule reading the whole history first,
// for every call (its result is the same: no call is denied).
var historyGuards = []string{
	flowGuards[0],
	`history.exists(h, h.capability == 'fetch_url' && 'untrusted' in h.labels && h.status == 'failed') && call.capability == 'update_settings'`,
}

// guardRunner compiles srcs as tool_call guards that deny when true.
func guardRunner(b *testing.B, srcs []string) *op.Runner {
	c, err := expr.NewCompiler(expr.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var guards []op.Guard
	for i, src := range srcs {
		prg, err := c.Compile(expr.Guard, src, expr.Bool)
		if err != nil {
			b.Fatal(err)
		}
		guards = append(guards, op.Guard{Name: fmt.Sprintf("g%d", i), Operations: []op.Operation{op.ToolCall}, ReadOnly: true, IgnoresStep: true,
			Check: func(ctx context.Context, call op.Call) error {
				deny, err := prg.EvalBool(ctx, &expr.Vars{Request: call.Request, Metadata: call.Metadata, Call: &call, Flow: call.Flow})
				if err != nil || deny {
					return op.Deny("denied", fmt.Sprint("denied: ", err))
				}
				return nil
			}})
	}
	runner, err := op.Compile(op.Set{PolicyRevision: "r", Guards: guards})
	if err != nil {
		b.Fatal(err)
	}
	return runner
}

// BenchmarkCheck_Labels measures one allowed tool_call check (strict binding, the
// memory store, the two guards of flowGuards) of a mail step inside the company:
// plain, a generation without labels on a request with no history; history20, a
// generation with labels on a request whose earlier phase executed 20 steps, each
// labelled secret or untrusted, so that the guards read a 20-step history and its
// labels. executed20 is history20 without labels: the same request shape, so
// history20/executed20 is the labels' own cost, and executed20/plain what a request
// that already ran 20 steps costs anyway (its larger record and state).
// history20-read is history20 with historyGuards: what a rule that walks the whole
// history on every call adds (history20-read/history20). Every check
// binds a step no check claimed yet: a new request (the timer stopped) every 20
// checks. The goal is history20 within 1.2× plain.
func BenchmarkCheck_Labels(b *testing.B) {
	catalog, err := engine.NewCatalog([]engine.CatalogAgent{{Namespace: "ns", Agent: "tools",
		Capabilities: []engine.Capability{{Name: "read_secret"}, {Name: "fetch_url"}, {Name: "send_email"}, {Name: "update_settings"}}}})
	if err != nil {
		b.Fatal(err)
	}
	p := mustNew(b, []engine.Hook{&passRequired{passPlan{"review"}}}, engine.WithCatalog(catalog))
	ctx := context.Background()
	const batch = 20
	mail := func(i int) engine.RoutingStep {
		return admitStep(fmt.Sprintf("mail-%d", i), "send_email", "mail", map[string]any{"to": fmt.Sprintf("p%d@acme.example", i), "body": "hello"})
	}
	for _, side := range []struct {
		name    string
		labels  engine.Labeler
		history int
		guards  []string
	}{{"plain", nil, 0, flowGuards}, {"executed20", nil, 20, flowGuards}, {"history20", capabilityLabels{}, 20, flowGuards},
		{"history20-read", capabilityLabels{}, 20, historyGuards}} {
		b.Run(side.name, func(b *testing.B) {
			runner := guardRunner(b, side.guards)
			mem := store.NewMemory(store.MemoryOptions{MaxEntries: 1 << 20, Retention: store.Retention{MaxRecords: 1 << 20}})
			d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: &engine.Generation{ID: "g", Pipeline: p, Runner: runner, Labels: side.labels}},
				States: mem, Records: mem})
			if err != nil {
				b.Fatal(err)
			}
			open := func(id string) {
				s, err := d.Open(ctx, id, engine.Opening{Text: "mail"})
				if err != nil {
					b.Fatal(err)
				}
				phase := 1
				if side.history > 0 {
					steps := make([]engine.RoutingStep, side.history)
					for i := range steps {
						steps[i] = admitStep(fmt.Sprintf("read-%d", i), []string{"read_secret", "fetch_url"}[i%2], "read", map[string]any{"n": float64(i)})
					}
					if _, err := s.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p1", Steps: steps, Terminal: new(bool)}, phase); err != nil {
						b.Fatal(err)
					}
					for _, st := range steps {
						if res, err := d.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: id, StepID: st.StepID, Namespace: "ns", AgentName: "tools",
							Capability: st.Capability(), Parameters: st.Parameters()}); err != nil || !res.Allowed {
							b.Fatalf("history step: %+v, %v", res, err)
						}
						if err := d.Finish(ctx, engine.Finish{RequestID: id, StepID: st.StepID, Status: engine.RunSucceeded, Response: map[string]any{"v": "x"}}); err != nil {
							b.Fatal(err)
						}
					}
					phase++
					if s, err = d.Resume(ctx, engine.StageAfterPlanning, id, engine.Opening{}); err != nil {
						b.Fatal(err)
					}
				}
				steps := make([]engine.RoutingStep, batch)
				for i := range steps {
					steps[i] = mail(i)
				}
				if _, err := s.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p2", Steps: steps}, phase); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			id := ""
			for i := 0; b.Loop(); i++ {
				if i%batch == 0 {
					b.StopTimer()
					id = fmt.Sprintf("r%d", i)
					open(id)
					b.StartTimer()
				}
				st := mail(i % batch)
				res, err := d.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: id, StepID: st.StepID, Namespace: "ns", AgentName: "tools",
					Capability: "send_email", Parameters: st.Parameters()})
				if err != nil || !res.Allowed {
					b.Fatalf("check %d: %+v, %v", i, res, err)
				}
			}
		})
	}
}
