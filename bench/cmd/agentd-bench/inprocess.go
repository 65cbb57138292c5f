package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/bench/internal/inproc"
	"github.com/agentd-dev/agentd/bench/internal/prof"
	"github.com/agentd-dev/agentd/bench/internal/report"
)

// planCases are the in-process plan reviews of section 1.
var planCases = []inproc.PlanCase{
	{Steps: 3, Size: fixture.Small}, {Steps: 3, Size: fixture.Large},
	{Steps: 30, Size: fixture.Small}, {Steps: 30, Size: fixture.Large},
}

// inProcessGoal is the in-process goal: agentd's required hook costs at most
// this many times raw OPA's evaluation.
const inProcessGoal = 1.2

// memoHitGoal is the most an in-process memo hit for 3 steps may cost (issue 19).
const memoHitGoal = 1000.0 // ns

// planReview measures section 1. Each case has four sides, interleaved: agentd
// reviewing a plan of unseen operations each operation (new plan_id, instructions, step
// ids and combination of operations: a memo miss every time), agentd reviewing a new
// plan of a known shape each operation (new plan_id and instructions: a memo hit, as
// the policy reads neither), agentd reviewing an unseen plan each operation (new step
// ids too, over known operations: a memo hit, as the policy reads a step's id only to
// name it when denied), and raw OPA on the plans of unseen operations. The goal is
// judged on every agentd side.
func (b *bench) planReview() error {
	var worst float64
	for i, c := range planCases {
		var sides []inproc.Side
		for _, v := range []fixture.Variation{fixture.NewOperations, fixture.NewText, fixture.Unseen} {
			dir, err := os.MkdirTemp(b.tmp, "inproc-")
			if err != nil {
				return err
			}
			s, err := inproc.AgentdPlanReview(dir, b.policies, c, v)
			if err != nil {
				return fmt.Errorf("%v: %w", c, err)
			}
			sides = append(sides, s)
		}
		opa, err := inproc.OPAPlanReview(b.policies, c, fixture.NewOperations)
		if err != nil {
			return fmt.Errorf("%v: %w", c, err)
		}
		res, err := inproc.Compare(b.rounds, append(sides, opa)...)
		if err != nil {
			return err
		}
		miss, hit, newIDs, ro := res[0], res[1], res[2], res[3]
		worst = max(worst, miss.NsPerOp/ro.NsPerOp)
		log.Printf("%v: agentd unseen operations %s %v, agentd known shape %s %v, agentd new step ids %s %v, raw OPA %s %v", c,
			report.NS(miss.NsPerOp), miss.Rounds, report.NS(hit.NsPerOp), hit.Rounds, report.NS(newIDs.NsPerOp), newIDs.Rounds, report.NS(ro.NsPerOp), ro.Rounds)
		what := fmt.Sprintf("In process: plan review, %d steps × %s-entry allow-list", c.Steps, report.Count(int64(c.Size.Entries())))
		id := fmt.Sprintf("1%c", 'a'+i)
		b.rows["1"] = append(b.rows["1"],
			report.Row{ID: id, Figure: what + ", " + fixture.NewOperations.String() + " per op (memo miss)",
				Agentd: perOp(miss), Peer: perOp(ro) + " (raw OPA)", Ratio: ratios(miss, ro),
				Goal: goal(miss.NsPerOp/ro.NsPerOp <= inProcessGoal, fmt.Sprintf("≤ %.1f×", inProcessGoal))},
			report.Row{ID: id + "′", Figure: what + ", " + fixture.NewText.String() + " per op (memo hit)",
				Agentd: perOp(hit), Peer: "same raw OPA figure", Ratio: ratios(hit, ro),
				Goal: goal(hit.NsPerOp/ro.NsPerOp <= inProcessGoal, fmt.Sprintf("≤ %.1f× (memo on a repeated plan shape)", inProcessGoal))},
			report.Row{ID: id + "″", Figure: what + ", " + fixture.Unseen.String() + " per op (memo hit: allowed, step ids only name denied steps)",
				Agentd: perOp(newIDs), Peer: "same raw OPA figure", Ratio: ratios(newIDs, ro),
				Goal: goal(newIDs.NsPerOp/ro.NsPerOp <= inProcessGoal, fmt.Sprintf("≤ %.1f×", inProcessGoal))},
		)
		b.bars["1"] = append(b.bars["1"],
			report.Bar{Label: fmt.Sprintf("%s %d steps × %s entries, unseen operations: ns/op vs raw OPA", id, c.Steps, report.Count(int64(c.Size.Entries()))),
				Ratio: miss.NsPerOp / ro.NsPerOp, Goal: inProcessGoal},
			report.Bar{Label: fmt.Sprintf("%s′ %d steps × %s entries, known shape: ns/op vs raw OPA", id, c.Steps, report.Count(int64(c.Size.Entries()))),
				Ratio: hit.NsPerOp / ro.NsPerOp, Goal: inProcessGoal},
		)
		if c.Size == fixture.Large {
			lb, err := inproc.Run(inproc.MemoHit(c))
			if err != nil {
				return err
			}
			ns := float64(lb.T.Nanoseconds()) / float64(lb.N)
			if c.Steps == 3 {
				b.goals = append(b.goals, fmt.Sprintf("In process, a memo hit for 3 steps costs ≤ %s (row %s′): %s (%s; the hash-and-lookup floor, row m3, %s).",
					report.NS(memoHitGoal), id, metOrNot(hit.NsPerOp <= memoHitGoal), report.NS(hit.NsPerOp), report.NS(ns)))
			}
			b.extra = append(b.extra, report.Row{
				ID:     fmt.Sprintf("m%d", c.Steps),
				Figure: fmt.Sprintf("Lower bound of a memo hit, %d steps: hash of generation + read paths, one map lookup", c.Steps),
				Agentd: fmt.Sprintf("%s/op · %d allocs/op", report.NS(ns), lb.AllocsPerOp()),
				Peer:   perOp(hit) + " (row " + id + "′, agentd's memo hit)",
				Ratio:  report.Ratio(ns, hit.NsPerOp),
				Goal:   "room left in the hit path",
			})
		}
	}
	b.goals = append(b.goals, fmt.Sprintf("In process, agentd's required hook ≤ %.1f× raw OPA on plans of unseen operations (rows 1a–1d, memo miss): %s (worst case %.2f×). "+
		"Rows 1a′–1d′ are new plans of a known shape and rows 1a″–1d″ unseen plans over known operations, which the memo answers.", inProcessGoal, metOrNot(worst <= inProcessGoal), worst))
	return nil
}

func ratios(a, b inproc.Result) string {
	return report.Ratio(a.NsPerOp, b.NsPerOp) + " time, " + report.Ratio(float64(a.AllocsPerOp), float64(b.AllocsPerOp)) + " allocs"
}

func (b *bench) beforePlanning() error {
	dir, err := os.MkdirTemp(b.tmp, "before-")
	if err != nil {
		return err
	}
	agentd, got, err := inproc.AgentdBeforePlanning(dir)
	if err != nil {
		return err
	}
	raw, want, err := inproc.RawCELBeforePlanning()
	if err != nil {
		return err
	}
	if err := inproc.SameEnrichments(got, want); err != nil {
		return err
	}
	rounds := max(3*b.rounds, 9)
	res, err := inproc.Compare(rounds, agentd, raw)
	if err != nil {
		return err
	}
	ra, rr := res[0], res[1]
	ratio := inproc.PairedRatio(ra, rr)
	b.rows["3"] = append(b.rows["3"], report.Row{
		ID: "3",
		Figure: fmt.Sprintf("In process: before_planning, %d hooks (CEL when, enrich ×9, cache.lookup miss); %d rounds, the ratio is the median of each round's",
			inproc.BeforeHooks, rounds),
		Agentd: perOp(ra), Peer: perOp(rr) + " (raw cel-go)",
		Ratio: report.Ratio(ratio, 1) + " time, " + report.Ratio(float64(ra.AllocsPerOp), float64(rr.AllocsPerOp)) + " allocs",
		Goal:  goal(ratio <= beforeGoal, fmt.Sprintf("≤ %.1f× time", beforeGoal)),
	})
	b.goals = append(b.goals, fmt.Sprintf("In process, before_planning with %d hooks costs ≤ %.1f× raw cel-go (row 3): %s (%.2f×).",
		inproc.BeforeHooks, beforeGoal, metOrNot(ratio <= beforeGoal), ratio))
	return nil
}

// beforeGoal is the most before_planning with 10 hooks may cost as a multiple of raw
// cel-go evaluating the same expressions (issue 19).
const beforeGoal = 1.5

// bindingGoal is the most plan binding may add to an operation check (issue 12).
const bindingGoal = 5000.0 // ns

// binding measures section 13 with the engine's BenchmarkCheck_Binding, which makes
// the same allowed tool_call checks with plan binding off and strict (with a guard that
// reads only the call, and with one that also reads the accepted step) in turn in one
// loop (per-op interleaving: the difference is a few microseconds on tens, below what
// whole runs side by side can resolve) and reports each and the differences; the
// medians over the runs are reported, one row per guard, on the memory store and on
// the durable store (BenchmarkCheck_BindingDurable), where the claim is a write of its
// own in the check's commit.
func (b *bench) binding() error {
	runs := max(3*b.rounds, 9)
	for _, bench := range []struct{ name, id, store string }{
		{"Check_Binding", "13", "the memory store"},
		{"Check_BindingDurable", "13d", "the durable store (bolt, default durability)"},
	} {
		m, err := b.goBench("./engine/", bench.name, runs, "1s")
		if err != nil {
			return err
		}
		metrics := m[""]
		for _, u := range []string{"off-ns/check", "strict-ns/check", "strict+step-ns/check", "binding-ns/check", "binding+step-ns/check"} {
			if len(metrics[u]) != runs {
				return fmt.Errorf("go test -bench %s: %s in %d of %d runs", bench.name, u, len(metrics[u]), runs)
			}
		}
		med := medianOf
		off := med(metrics["off-ns/check"])
		row := func(guard, strict string, diffs []float64, goal string) {
			b.rows["13"] = append(b.rows["13"], report.Row{
				ID: bench.id,
				Figure: fmt.Sprintf("In process: an allowed tool_call check on %s with %s, plan binding strict vs off, "+
					"in turn in one loop (engine's Benchmark%s; median of %d runs, binding's added cost %s–%s over them)",
					bench.store, guard, bench.name, runs, report.NS(slices.Min(diffs)), report.NS(slices.Max(diffs))),
				Agentd: report.NS(med(metrics[strict])) + "/check", Peer: report.NS(off) + "/check (binding off)",
				Ratio: report.Ratio(med(metrics[strict]), off), Goal: goal,
			})
		}
		a, step := med(metrics["binding-ns/check"]), med(metrics["binding+step-ns/check"])
		row("one read-only guard that reads the call (as most compiled guards do)", "strict-ns/check", metrics["binding-ns/check"],
			goal(a <= bindingGoal, fmt.Sprintf("added %s ≤ %s", report.NS(a), report.NS(bindingGoal))))
		row("one read-only guard that also reads the accepted step (call.step, which the check then builds for it)", "strict+step-ns/check",
			metrics["binding+step-ns/check"], fmt.Sprintf("none set: added %s, of which the step object the guard asks for is %s", report.NS(step), report.NS(step-a)))
		b.goals = append(b.goals, fmt.Sprintf("Plan binding adds ≤ %s per check in process on %s (row %s): %s (%s; %s when a guard also reads call.step).",
			report.NS(bindingGoal), bench.store, bench.id, metOrNot(a <= bindingGoal), report.NS(a), report.NS(step)))
	}
	return nil
}

// inProcessProfiles writes CPU and allocation profiles of the 3-step plan review
// against the 5,000-entry allow-list with an unseen plan per operation (agentd's and raw
// OPA's), and of the before_planning stage.
func (b *bench) inProcessProfiles() error {
	c := inproc.PlanCase{Steps: 3, Size: fixture.Large}
	dir, err := os.MkdirTemp(b.tmp, "profile-")
	if err != nil {
		return err
	}
	agentd, err := inproc.AgentdPlanReview(dir, b.policies, c, fixture.NewOperations)
	if err != nil {
		return err
	}
	opa, err := inproc.OPAPlanReview(b.policies, c, fixture.NewOperations)
	if err != nil {
		return err
	}
	if dir, err = os.MkdirTemp(b.tmp, "profile-"); err != nil {
		return err
	}
	before, _, err := inproc.AgentdBeforePlanning(dir)
	if err != nil {
		return err
	}
	type run struct {
		side   inproc.Side
		name   string
		allocs bool
		d      time.Duration
		n      int
	}
	runs := []*run{
		{side: agentd, name: "inproc-agentd.cpu.pprof", d: b.profile},
		{side: agentd, name: "inproc-agentd.allocs.pprof", allocs: true, d: b.profile / 2},
		{side: opa, name: "inproc-opa.cpu.pprof", d: b.profile},
		{side: before, name: "inproc-before.cpu.pprof", d: b.profile / 2},
		{side: before, name: "inproc-before.allocs.pprof", allocs: true, d: b.profile / 4},
	}
	for _, r := range runs {
		path := filepath.Join(b.results, r.name)
		if r.allocs {
			r.n, err = prof.Allocs(path, r.d, r.side.Op)
		} else {
			r.n, err = prof.CPU(path, r.d, r.side.Op)
		}
		if err != nil {
			return err
		}
	}
	path := func(i int) string { return filepath.Join(b.results, runs[i].name) }
	about := "agentd in process, Pipeline.AfterPlanning, " + c.String() + ", " + fixture.NewOperations.String() + " per op (memo miss)"
	beforeAbout := fmt.Sprintf("agentd in process, Pipeline.BeforePlanning, %d hooks (row 3)", inproc.BeforeHooks)
	return b.summarize(
		profileSpec{title: "In process, agentd plan review — CPU", about: about, file: path(0), ops: runs[0].n, top: prof.TopOptions{Nodes: 20}},
		profileSpec{title: "In process, agentd plan review — allocations (objects)", about: about + "; delta over the profiled loop",
			file: path(1), ops: runs[1].n, top: prof.TopOptions{Nodes: 20, SampleIndex: "alloc_objects", Base: path(1) + ".base"}},
		profileSpec{title: "In process, raw OPA plan review — CPU", about: "raw OPA PreparedEvalQuery.Eval with rego.EvalInput, " + c.String(),
			file: path(2), ops: runs[2].n, top: prof.TopOptions{Nodes: 15}},
		profileSpec{title: "In process, agentd before_planning — CPU", about: beforeAbout, file: path(3), ops: runs[3].n, top: prof.TopOptions{Nodes: 20}},
		profileSpec{title: "In process, agentd before_planning — allocations (objects)", about: beforeAbout + "; delta over the profiled loop",
			file: path(4), ops: runs[4].n, top: prof.TopOptions{Nodes: 20, SampleIndex: "alloc_objects", Base: path(4) + ".base"}},
	)
}

// profileSpec names a profile to summarize: a breakdown by prof.Categories (per
// operation when ops, the operations the profile covers, is known) and pprof's flat
// top entries.
type profileSpec struct {
	title, about, file string
	ops                int
	top                prof.TopOptions
	noBreakdown        bool
}

func (b *bench) summarize(specs ...profileSpec) error {
	for _, s := range specs {
		top, err := prof.Top(b.goBin, s.file, s.top)
		if err != nil {
			return err
		}
		var shares []prof.Share
		if !s.noBreakdown {
			if shares, err = prof.Breakdown(b.goBin, s.file, s.top.SampleIndex, s.top.Base); err != nil {
				return err
			}
		}
		b.profiles = append(b.profiles, profile{title: s.title, about: s.about, file: filepath.Base(s.file), top: top,
			shares: shares, ops: s.ops, objects: s.top.SampleIndex != ""})
	}
	return nil
}

func perOp(r inproc.Result) string {
	return fmt.Sprintf("%s/op · %s allocs/op", report.NS(r.NsPerOp), report.Count(r.AllocsPerOp))
}

func goal(met bool, target string) string {
	return target + ": " + metOrNot(met)
}

func metOrNot(met bool) string {
	if met {
		return "**met**"
	}
	return "**not met**"
}
