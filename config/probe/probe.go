package probe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// Defaults of Options.
const (
	DefaultMaxPlans = 5000
	DefaultTimeout  = 60 * time.Second
)

// Options configure Run. The zero value is valid.
type Options struct {
	// Seed makes the run reproducible: the same seed on the same directory gives the
	// same report.
	Seed int64
	// MaxPlans bounds the mutated plans reviewed; 0 means DefaultMaxPlans. When more
	// are generated, a sample chosen by Seed is reviewed.
	MaxPlans int
	// Timeout bounds the run; 0 means DefaultTimeout. A run cut short says so
	// (Report.Truncated) and reports what it found.
	Timeout time.Duration
}

// ErrNoRequiredPolicy is the cause of an InputError about a generation without a
// required after-planning hook that runs a rego step: there is no policy to attack.
var ErrNoRequiredPolicy = errors.New("no required after-planning Rego policy")

// InputError is a directory the probe cannot attack. It unwraps to its cause.
type InputError struct {
	Message string
	Cause   error
}

func (e *InputError) Error() string { return e.Message }
func (e *InputError) Unwrap() error { return e.Cause }

// Report is the outcome of a run.
type Report struct {
	Seed int64 `json:"seed"`
	// Hook is the required after-planning hook attacked.
	Hook string `json:"hook"`
	// Seeds are the unmutated plans, with where each ended.
	Seeds []SeedResult `json:"seeds"`
	// Allowed are the operation identities the stage accepted unmutated.
	Allowed []string `json:"allowed_identities"`
	// Generated counts the mutated plans built, Reviewed those reviewed.
	Generated int `json:"generated"`
	Reviewed  int `json:"reviewed"`
	// Truncated: the run stopped at its timeout before reviewing every plan.
	Truncated bool            `json:"truncated"`
	Mutations []MutationStats `json:"mutations"`
	Findings  []Finding       `json:"findings"`
	// LabelSets are the label sets the seeds were repeated under (labelSets), when the
	// after_planning stage or the guards read the request's flow.
	LabelSets [][]string `json:"label_sets,omitempty"`
	// LabelFindings are readers of the flow whose decisions no label set changed.
	LabelFindings []LabelFinding `json:"label_findings"`
	// Warnings say what the run could not try: a policy reading request metadata that
	// no seed carries, or the request's labels when the config declares none.
	Warnings []string `json:"warnings,omitempty"`
	// cases are, per mutation whose plans reached the policy, one the policy rejected
	// (else one accepted that is no finding), for Cases.
	cases []reviewed
}

// SeedResult is one seed and where it ended.
type SeedResult struct {
	Source string `json:"source"`
	Ending Ending `json:"verdict"`
}

// MutationStats counts, per mutation, the plans reviewed and where each ended.
type MutationStats struct {
	Name     string         `json:"name"`
	Doc      string         `json:"doc"`
	Reviewed int            `json:"reviewed"`
	Endings  map[Ending]int `json:"verdicts"`
	Findings int            `json:"findings"`
}

// Finding is a mutated plan the stage accepted although it holds an operation identity
// the policy did not allow unmutated, minimized.
type Finding struct {
	Mutation string `json:"mutation"`
	Detail   string `json:"detail"`
	// Seed is the source of the seed the plan was made from.
	Seed string `json:"seed"`
	// Identity is the operation identity that got through.
	Identity string `json:"identity"`
	// Request, Metadata, Phase, PriorSteps, Labels and History complete Plan into a reproducing
	// after_planning call (and test case).
	Request    string               `json:"request,omitempty"`
	Metadata   map[string]any       `json:"metadata,omitempty"`
	PriorSteps []engine.RoutingStep `json:"prior_steps,omitempty"`
	// Labels and History are the flow the request starts from (given.labels and
	// given.history of the reproducing test case).
	Labels  []string             `json:"labels,omitempty"`
	History []engine.HistoryStep `json:"history,omitempty"`
	// Plan is the minimal plan, in its wire form.
	Plan any `json:"plan"`
	// Rule says which deny rule should have caught it: the rules that stopped on the
	// offending step (Misses), else the kind of rule that would.
	Rule   string `json:"rule"`
	Misses []Miss `json:"misses,omitempty"`
}

// Miss is a deny rule that evaluated the offending step and stopped at an expression.
type Miss struct {
	Rule      string `json:"rule"`
	Source    string `json:"source"`
	StoppedAt string `json:"stopped_at"`
	Expr      string `json:"expr"`
}

// prober holds one run's state.
type prober struct {
	gen *config.Generation
	// allowed are the identities the stage accepted unmutated, byContext the same per
	// request metadata (contextOf).
	allowed   map[string]bool
	byContext map[string]map[string]bool
	// guardsReadFlow: the guards read the request's flow, so a case with a flow is
	// checked by them too (review).
	guardsReadFlow bool
}

// reviewed is a case and its outcome.
type reviewed struct {
	c Case
	o outcome
}

// Run probes the required after-planning policy of gen, compiled from dir. It returns
// an *InputError when there is nothing to attack or the directory's tests or requests
// do not load. It never writes anywhere: the stage runs in process, recording nothing.
func Run(ctx context.Context, dir string, gen *config.Generation, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	hook, err := requiredRegoHook(gen)
	if err != nil {
		return nil, err
	}
	all, err := seeds(dir, gen)
	if err != nil {
		return nil, &InputError{Message: "probe: " + err.Error(), Cause: err}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	readers := flowReaders(gen)
	p := &prober{gen: gen, allowed: map[string]bool{}, byContext: map[string]map[string]bool{}, guardsReadFlow: slices.Contains(readers, "guards")}
	r := &Report{Seed: opts.Seed, Hook: hook, Seeds: []SeedResult{}, Findings: []Finding{}, LabelFindings: []LabelFinding{}}
	if len(readers) > 0 {
		if r.LabelSets = labelSets(gen); len(r.LabelSets) == 0 {
			r.Warnings = append(r.Warnings, "the "+strings.Join(readers, " and the ")+" read the request's labels or history, "+
				"but the config declares no label (labels:): no label set to try")
		}
	}
	if gen.Reads.May(engine.StageAfterPlanning, "metadata") && !slices.ContainsFunc(all, func(c Case) bool { return len(c.Metadata) > 0 }) {
		r.Warnings = append(r.Warnings, "the after_planning stage reads the request metadata, but no test or request has any: "+
			"add a test whose given.metadata is a real request's (its tenant), so that the catalog's plans are reviewed "+
			"under it and its members are mutated (missing, empty, unknown)")
	}
	g := &generator{rng: rand.New(rand.NewPCG(uint64(opts.Seed), 0x70726f6265))}
	var bases []*base
	results := make([]outcome, len(all))
	for i, s := range all {
		o := p.review(ctx, &s)
		results[i] = o
		r.Seeds = append(r.Seeds, SeedResult{Source: s.Source, Ending: o.ending})
		switch o.ending {
		case Accepted:
			ctxAllowed := p.byContext[s.Context]
			if ctxAllowed == nil {
				ctxAllowed = map[string]bool{}
				p.byContext[s.Context] = ctxAllowed
			}
			for _, id := range identities(o.plan) {
				p.allowed[id], ctxAllowed[id] = true, true
			}
			bases = append(bases, &base{Case: s, accepted: true})
		case RejectedStage, RejectedGuard:
			bases = append(bases, &base{Case: s})
			if steps := s.steps(); len(steps) == 1 {
				g.denied = append(g.denied, steps[0])
			}
		}
	}
	r.LabelFindings = append(r.LabelFindings, p.silentReaders(ctx, all, results, readers, r.LabelSets)...)
	r.Allowed = slices.Sorted(func(yield func(string) bool) {
		for id := range p.allowed {
			if !yield(id) {
				return
			}
		}
	})

	candidates := generate(g, bases)
	r.Generated = len(candidates)
	candidates = sample(g.rng, candidates, opts.MaxPlans)
	stats := map[string]*MutationStats{}
	for _, m := range mutations {
		stats[m.Name] = &MutationStats{Name: m.Name, Doc: m.Doc, Endings: map[Ending]int{}}
	}
	seen := map[string]bool{}
	example := map[string]reviewed{}
	var found []reviewed
	for i := range candidates {
		if ctx.Err() != nil {
			r.Truncated = true
			break
		}
		c := &candidates[i]
		o := p.review(ctx, c)
		if ctx.Err() != nil { // a review cut short by the timeout proves nothing
			r.Truncated = true
			break
		}
		r.Reviewed++
		st := stats[c.Mutation]
		st.Reviewed++
		st.Endings[o.ending]++
		id := p.escaped(c, o)
		if prev, ok := example[c.Mutation]; o.ending == RejectedStage && (!ok || prev.o.ending != RejectedStage) ||
			o.ending == Accepted && id == "" && !ok {
			example[c.Mutation] = reviewed{*c, o}
		}
		if id == "" || seen[c.Mutation+" "+id] {
			continue
		}
		seen[c.Mutation+" "+id] = true
		st.Findings++
		found = append(found, reviewed{*c, o})
	}
	for _, m := range mutations {
		r.Mutations = append(r.Mutations, *stats[m.Name])
		if e, ok := example[m.Name]; ok {
			r.cases = append(r.cases, e)
		}
	}
	for _, f := range found {
		r.Findings = append(r.Findings, p.finding(context.WithoutCancel(ctx), f.c))
	}
	return r, nil
}

func (o Options) withDefaults() Options {
	if o.MaxPlans <= 0 {
		o.MaxPlans = DefaultMaxPlans
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// requiredRegoHook returns the name of gen's required after-planning hook, which must
// run a rego step.
func requiredRegoHook(gen *config.Generation) (string, error) {
	name, ok := gen.Pipeline.RequiredHook()
	if !ok {
		return "", &InputError{Cause: ErrNoRequiredPolicy, Message: "probe: " + gen.Dir + " has no required after_planning hook " +
			"(`required: true` with a rego step): every plan passes the stage, and there is no policy to probe"}
	}
	for _, h := range gen.Hooks {
		if h.Name == name && slices.Contains(h.Steps, "rego") {
			return name, nil
		}
	}
	return "", &InputError{Cause: ErrNoRequiredPolicy, Message: fmt.Sprintf("probe: the required after_planning hook %q has no rego step: probe attacks Rego policies", name)}
}

// generate builds every candidate, mutation by mutation, seed by seed.
func generate(g *generator, bases []*base) []Case {
	var out []Case
	for _, m := range mutations {
		for _, b := range bases {
			out = append(out, m.apply(g, b)...)
		}
	}
	return out
}

// sample keeps at most n candidates, chosen by rng, in their generated order.
func sample(rng *rand.Rand, candidates []Case, n int) []Case {
	if len(candidates) <= n {
		return candidates
	}
	keep := rng.Perm(len(candidates))[:n]
	slices.Sort(keep)
	out := make([]Case, n)
	for i, k := range keep {
		out[i] = candidates[k]
	}
	return out
}
