package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/report"
)

// sections are the report's sections in table order: each comparison with OPA or the
// HTTP floor first.
var sections = []string{"1", "2", "9", "10", "11", "3", "13", "15", "4", "5", "6", "7", "14", "8", "12"}

// table returns every row, section by section, each section's in the order of their
// ids (the measurements that fill a section may run apart, in any order).
func (b *bench) table() []report.Row {
	var rows []report.Row
	for _, s := range sections {
		rows = append(rows, slices.SortedStableFunc(slices.Values(b.rows[s]), func(x, y report.Row) int { return strings.Compare(x.ID, y.ID) })...)
	}
	return rows
}

// chartBars returns every ratio of the chart, section by section.
func (b *bench) chartBars() []report.Bar {
	var bars []report.Bar
	for _, s := range sections {
		bars = append(bars, b.bars[s]...)
	}
	return bars
}

func (b *bench) render(m report.Machine, took time.Duration) string {
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("# agentd benchmark report\n\n")
	p("Written by `make bench` (bench/cmd/agentd-bench) on %s; every figure below comes from this one run, "+
		"which took %v (driver wall time, builds not included).\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), took.Round(time.Second))
	p("%s\n\n%s\n\n", m.Line(), m.CommitLine())
	if len(b.setFlags) > 0 {
		p("Flags changed from their defaults: `%s`.\n\n", strings.Join(b.setFlags, " "))
	}
	p("The machine is shared and noisy: other work may have run beside the benchmark. In-process pairs are " +
		"interleaved round by round and HTTP runs alternate between the two servers so that noise falls on both " +
		"sides, and ratios are computed from figures of this run only; repeat runs can still differ by 10–20%%.\n\n")

	p("## Ratios at a glance\n\n![agentd ÷ peer for each comparison with a peer](%s)\n\n"+
		"[%s](%s): one bar per ratio, from parity (1×); green meets the issue's goal, red misses it, grey has none.\n\n", chartFile, chartFile, chartFile)
	p("## Results\n\n%s\n", report.Table(b.table()))
	p("## Goals\n\n")
	for _, g := range b.goals {
		p("- %s\n", g)
	}
	b.renderScale(p)
	p("\n## Projection (not agentd code)\n\n")
	p("What a decision memo hit would cost at least: hashing the generation id and every input path " +
		"`data.agentd.plan` can read, then one map lookup. Compare with row 1's agentd figure for the same plan.\n\n")
	p("%s\n", report.Table(b.extra))
	p("## Settings\n\n")
	p("- In process: %d interleaved rounds per comparison, each side a `testing.Benchmark` of about %v per round, the order "+
		"rotating; the median round is reported. agentd: a `decl.Load`ed generation (the required `rego: {query: data.agentd.plan}` "+
		"hook over policies/ and the generated allow-list, no catalog), `Pipeline.AfterPlanning` with a nil trail. Raw OPA: "+
		"`rego.New(Query, Module…, Store(inmem.NewFromObject(data))).PrepareForEval` once, `Eval(rego.EvalInput(input))` per op "+
		"with the same input map agentd builds. A plan of unseen operations (new plan_id, step instructions, step ids and a "+
		"combination of allowed operations no earlier op had) per op is what no memo has seen; a new plan of a known shape (new "+
		"plan_id and step instructions over the same operations and step ids) and an unseen plan (new step ids too, over known "+
		"operations, as an orchestrator names the steps of each new plan) are an orchestrator's everyday traffic, which agentd's "+
		"decision memo answers: its key is a projection of only the input paths the compiled policy can observe (here each step's "+
		"step_id, namespace, agent_name and metadata.capability; for a decision that allows the plan, a step_id's type alone, as "+
		"the policy reads step ids only to name denied steps).\n",
		b.rounds, b.benchtime)
	p("- HTTP: the in-repo load generator (bench/internal/load; HTTP/1.1 written and read by the workers, not net/http's client), %d workers over %d keep-alive connections; per run a tenth of "+
		"the measured count as warm-up, then the measured requests; %d runs per server and case, alternating which server goes "+
		"first (median reported). Both servers run throughout, on loopback. agentd `serve --log-level warn` with `rego_timeout: 5s`; "+
		"`opa run --server --log-level error --skip-version-check`: neither writes a line per request. "+
		"Every agentd request has a new request_id, as an orchestrator sends (one request per user request, after_planning "+
		"once per phase; re-using an id would make each call a later phase of the same request, which plan validation "+
		"rejects for repeated step ids). Plans vary per request in both servers' bodies alike: a new plan of a known shape, an "+
		"unseen plan, a plan of unseen operations, or the identical plan, as in process.\n",
		b.concurrency, b.concurrency, b.httpRounds)
	p("- Cheap policy and HTTP floor (sections 9 and 10): agentd and OPA serve `data.bench.cheap`, an object-lookup allow-list "+
		"(`not data.x.allowed[step.namespace][step.agent_name][step.metadata.capability]` per step, violations named by step_id) "+
		"over the same 5,000 entries; the floor is `agentd-bench floor`, a net/http server in a process of its own that reads the "+
		"after_planning body as agentd does (bounded read, UTF-8 check, strict decoding into the engine's wire types) and writes "+
		"a fixed allowed answer. The three servers get the same bodies from the same load generator, %s measured requests per "+
		"run, %d runs each, the order rotating (median reported).\n", report.Count(int64(b.cheapRequests)), b.httpRounds)
	p("- Load generator, agentd and OPA share the machine's %d cores.\n", m.Cores)
	for _, n := range b.notes {
		p("- %s\n", n)
	}
	p("\n## Profiles\n\nThe profiles are in bench/results/ (`go tool pprof -http=: bench/results/<file>`); the top entries:\n\n")
	p("Each profile first as a breakdown (every sample goes to the first category, in table order, that matches " +
		"any frame of its stack; per-operation figures divide by the operations the profile covered, estimated " +
		"from the load for the HTTP ones), then pprof's flat top entries.\n\n")
	for _, pr := range b.profiles {
		p("### %s\n\n%s — `%s`\n\n%s\n```\n%s\n```\n\n", pr.title, pr.about, pr.file, breakdownTable(pr), pr.top)
	}
	return w.String()
}

// breakdownTable renders a profile's shares, per operation when the operation count
// is known.
func breakdownTable(pr profile) string {
	if len(pr.shares) == 0 {
		return ""
	}
	var w strings.Builder
	unit := "CPU time"
	if pr.objects {
		unit = "allocated objects"
	}
	perOp := pr.ops > 0
	fmt.Fprintf(&w, "| where | share of %s |", unit)
	if perOp {
		fmt.Fprintf(&w, " per op (%s ops) |", report.Count(int64(pr.ops)))
	}
	w.WriteString("\n|---|---:|")
	if perOp {
		w.WriteString("---:|")
	}
	w.WriteString("\n")
	for _, s := range pr.shares {
		if s.Fraction < 0.005 {
			continue
		}
		fmt.Fprintf(&w, "| %s | %.1f%% |", s.Category, 100*s.Fraction)
		if perOp {
			v := s.Value / float64(pr.ops)
			if pr.objects {
				fmt.Fprintf(&w, " %.1f |", v)
			} else {
				fmt.Fprintf(&w, " %s |", report.NS(v))
			}
		}
		w.WriteString("\n")
	}
	return w.String()
}
