package probe

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// requestsDir holds example API bodies and eval scripts, read for their plans.
const requestsDir = "requests"

// maxContexts bounds the request metadata the catalog's plans are repeated with.
const maxContexts = 8

// seeds returns the plans the directory knows, in a fixed order: one single-step plan
// per catalog capability, the after_planning plans of tests/*.yaml, then those of
// requests/*.json. The catalog's plans carry the request metadata of the first test or
// request that has some, so that a policy reading it judges them as it judges a real
// request; when the after_planning stage reads the metadata, they are repeated with
// each distinct metadata of the tests and requests (at most maxContexts), so that what
// each request context is allowed is known. A test's plan starts from its
// given.labels and given.history. When the after_planning stage or the guards read the
// request's flow (labels, call.labels, history), every seed without a flow of its own
// is repeated under each label set (labelSets), so that a rule that only fires with a
// label is exercised. Each seed's Context names its metadata and flow.
func seeds(dir string, gen *config.Generation) ([]Case, error) {
	known, err := knownSeeds(dir)
	if err != nil {
		return nil, err
	}
	var contexts []map[string]any
	seen := map[string]bool{}
	for _, k := range known {
		if key := contextOf(k.Metadata); len(k.Metadata) > 0 && !seen[key] && len(contexts) < maxContexts {
			seen[key] = true
			contexts = append(contexts, k.Metadata)
		}
	}
	if len(contexts) > 1 && !gen.Reads.May(engine.StageAfterPlanning, "metadata") {
		contexts = contexts[:1] // the stage judges every context alike
	}
	catalog := catalogSeeds(gen.Catalog)
	out := catalog
	for i, m := range contexts {
		if i > 0 {
			out = append(out, catalogSeeds(gen.Catalog)...)
		}
		for j := len(out) - len(catalog); j < len(out); j++ {
			out[j].Metadata = cloneMap(m)
			if i > 0 {
				out[j].Source += " with the metadata " + contextOf(m)
			}
		}
	}
	out = append(out, known...)
	if len(flowReaders(gen)) > 0 {
		out = labelled(out, labelSets(gen))
	}
	for i := range out {
		out[i].Context = contextOf(out[i].Metadata) + flowContext(&out[i])
	}
	return out, nil
}

// knownSeeds are the after_planning plans of tests/*.yaml, then those of
// requests/*.json.
func knownSeeds(dir string) ([]Case, error) {
	var out []Case
	cases, err := config.LoadTests(dir)
	if err != nil {
		return nil, err
	}
	for _, tc := range cases {
		if engine.Stage(tc.Stage) != engine.StageAfterPlanning || tc.Given.Plan == nil {
			continue
		}
		g := tc.Given
		plan := planWire(g.Plan)
		prior := g.PriorSteps
		if g.Phase > 1 && len(prior) > 0 {
			plan["phase_number"] = json.Number(fmt.Sprint(g.Phase))
		} else if len(prior) == 0 {
			delete(plan, "phase_number") // a continued request's earlier phases are not known here
		}
		out = append(out, Case{
			Source: fmt.Sprintf("%s:%d", tc.File, tc.Line), Request: g.Request,
			Metadata: cloneMap(g.Metadata), Enrichments: cloneMap(g.Enrichments), Prior: prior, Plan: plan,
			Labels: g.Labels, History: g.History,
		})
	}
	reqs, err := requestSeeds(dir)
	return append(out, reqs...), err
}

// catalogSeeds is one single-step plan per capability of the catalog, in catalog order.
func catalogSeeds(c *engine.Catalog) []Case {
	var out []Case
	for _, a := range c.Agents() {
		for _, cp := range a.Capabilities {
			out = append(out, Case{
				Source:  "catalog " + a.Namespace + "/" + a.Agent + "/" + cp.Name,
				Request: "probe " + cp.Name,
				Plan: map[string]any{"plan_id": "probe", "steps": []any{map[string]any{
					"step_id": "step-1", "agent_name": a.Agent, "namespace": a.Namespace, "instruction": "probe " + cp.Name,
					"metadata": map[string]any{"capability": cp.Name, "parameters": map[string]any{}},
				}}},
			})
		}
	}
	return out
}

// planWire is plan's wire form without a zero created_at.
func planWire(p *engine.RoutingPlan) map[string]any {
	m := wire(p).(map[string]any)
	if p.CreatedAt.IsZero() {
		delete(m, "created_at")
	}
	return m
}

// requestBody is the part of an after_planning API body a seed needs.
type requestBody struct {
	Request  string          `json:"request"`
	Metadata map[string]any  `json:"metadata"`
	Plan     json.RawMessage `json:"plan"`
}

// requestSeeds reads the plans of requests/*.json: each file is an after_planning body
// (a JSON object with a plan) or an eval script (a list of {call, body}) whose
// after_planning calls carry plans. Other files and calls are skipped.
func requestSeeds(dir string) ([]Case, error) {
	paths, err := filepath.Glob(filepath.Join(dir, requestsDir, "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var out []Case
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		name := requestsDir + "/" + filepath.Base(path)
		var bodies []requestBody
		var script []struct {
			Call string      `json:"call"`
			Body requestBody `json:"body"`
		}
		var body requestBody
		switch {
		case json.Unmarshal(data, &script) == nil:
			for _, c := range script {
				if c.Call == string(engine.StageAfterPlanning) {
					bodies = append(bodies, c.Body)
				}
			}
		case json.Unmarshal(data, &body) == nil:
			bodies = append(bodies, body)
		default:
			return nil, fmt.Errorf("%s: neither an API body nor an eval script: %w", name, json.Unmarshal(data, &body))
		}
		for i, b := range bodies {
			if len(b.Plan) == 0 {
				continue
			}
			plan, err := decodePlan(decodeJSON(b.Plan))
			if err != nil {
				return nil, fmt.Errorf("%s: plan: %w", name, err)
			}
			source := name
			if len(bodies) > 1 {
				source = fmt.Sprintf("%s[%d]", name, i)
			}
			w := planWire(plan)
			delete(w, "phase_number")
			out = append(out, Case{Source: source, Request: b.Request, Metadata: b.Metadata, Plan: w})
		}
	}
	return out, nil
}
