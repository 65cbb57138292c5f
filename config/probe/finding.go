package probe

import (
	"context"
	"strings"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/policy"
)

// finding minimizes a case the stage accepted with an identity not allowed, and names
// the rule that should have caught it.
func (p *prober) finding(ctx context.Context, c Case) Finding {
	c = p.minimize(ctx, c)
	o := p.review(ctx, &c)
	id := p.escaped(&c, o)
	f := Finding{
		Mutation: c.Mutation, Detail: c.Detail, Seed: c.Source, Identity: id,
		Request: c.Request, Metadata: c.Metadata, PriorSteps: c.Prior, Labels: c.Labels, History: c.History, Plan: c.Plan,
	}
	f.Misses = p.misses(ctx, c, o, id)
	parts := make([]string, len(f.Misses))
	for i, m := range f.Misses {
		parts[i] = m.Rule + " (" + m.Source + ") stopped at " + m.StoppedAt + ": " + m.Expr
	}
	f.Rule = strings.Join(parts, "; ")
	if f.Rule == "" {
		f.Rule = "no deny rule stopped on this step; needed: " + mutationByName(c.Mutation).Catch
	}
	return f
}

func mutationByName(name string) Mutation {
	for _, m := range mutations {
		if m.Name == name {
			return m
		}
	}
	return Mutation{Name: name}
}

// misses evaluates c once more with OPA's tracer and returns the deny rules that
// evaluated the step with identity id and stopped on it.
func (p *prober) misses(ctx context.Context, c Case, o outcome, id string) []Miss {
	var step *engine.RoutingStep
	for i, s := range o.plan.Steps {
		if identity(s) == id {
			step = &o.plan.Steps[i]
			break
		}
	}
	if step == nil {
		return nil
	}
	x := policy.NewExplainer()
	p.review(x.Context(ctx), &c)
	out := []Miss{}
	for _, e := range x.Explanations() {
		for _, m := range e.Misses(wire(step)) {
			out = append(out, Miss{Rule: m.Source.Rule, Source: m.Source.Location, StoppedAt: m.StoppedAt, Expr: m.Expr})
		}
	}
	return out
}

// minimize shrinks a finding while it stays one: it removes steps, then the members of
// each remaining step that the finding may not need, the request metadata's members,
// the request text and the earlier phases, one at a time, keeping each removal after
// which the stage still accepts a plan with an identity that is not allowed. Each
// attempt is one review, so minimizing costs at most a few reviews per step and member.
func (p *prober) minimize(ctx context.Context, c Case) Case {
	still := func(try Case) bool {
		return p.escaped(&try, p.review(ctx, &try)) != ""
	}
	attempt := func(change func(*Case) bool) {
		try := c.with(c.Mutation, c.Detail)
		try.Source = c.Source
		if change(&try) && still(try) {
			c = try
		}
	}
	for i := len(c.steps()) - 1; i >= 0; i-- {
		attempt(func(t *Case) bool { return removeStep(t, i) })
	}
	for i := range c.steps() {
		for _, member := range []string{"depends_on", "implicit_deps", "instruction"} {
			attempt(func(t *Case) bool { return deleteMember(t.steps()[i], member) })
		}
		attempt(func(t *Case) bool {
			meta, ok := t.steps()[i]["metadata"].(map[string]any)
			return ok && deleteMember(meta, "parameters")
		})
	}
	for _, member := range []string{"original_request", "mode", "created_at", "continuation_note"} {
		attempt(func(t *Case) bool { return deleteMember(t.plan(), member) })
	}
	for _, k := range sortedKeys(c.Metadata) {
		attempt(func(t *Case) bool { return deleteMember(t.Metadata, k) })
	}
	attempt(func(t *Case) bool {
		changed := t.Request != "" || len(t.Enrichments) > 0
		t.Request, t.Enrichments = "", nil
		return changed
	})
	attempt(func(t *Case) bool {
		changed := len(t.Prior) > 0
		t.Prior = nil
		return deleteMember(t.plan(), "phase_number") || changed
	})
	return c
}

// removeStep removes step i and every depends_on entry naming it.
func removeStep(c *Case, i int) bool {
	plan := c.plan()
	steps, ok := plan["steps"].([]any)
	if !ok || i >= len(steps) || len(steps) < 2 {
		return false
	}
	removed, _ := steps[i].(map[string]any)
	plan["steps"] = append(steps[:i:i], steps[i+1:]...)
	for _, s := range c.steps() {
		deps, ok := s["depends_on"].([]any)
		if !ok {
			continue
		}
		var kept []any
		for _, d := range deps {
			if d != removed["step_id"] {
				kept = append(kept, d)
			}
		}
		if len(kept) == 0 {
			delete(s, "depends_on")
		} else {
			s["depends_on"] = kept
		}
	}
	return true
}

func deleteMember(m map[string]any, key string) bool {
	if _, ok := m[key]; !ok {
		return false
	}
	delete(m, key)
	return true
}
