package main

import (
	"fmt"
	"log"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentd-dev/agentd/bench/internal/report"
)

// benchMetrics are one `go test -bench` run's figures: by sub-benchmark ("" for the
// benchmark itself), then by unit (ns/op, or a ReportMetric unit), one value per run.
type benchMetrics map[string]map[string][]float64

// get returns the values of sub's unit, nil when the run printed none.
func (m benchMetrics) get(sub, unit string) []float64 { return m[sub][unit] }

// goBench runs the benchmark named name (without its Benchmark prefix) in pkg, runs
// times for benchtime each, and returns its figures; none (an empty map, no error) when
// the package has no such benchmark.
func (b *bench) goBench(pkg, name string, runs int, benchtime string) (benchMetrics, error) {
	cmd := exec.CommandContext(b.ctx, b.goBin, "test", "-run", "^$", "-bench", "^Benchmark"+name+"$",
		"-count", strconv.Itoa(runs), "-benchtime", benchtime, pkg)
	cmd.Dir = b.repo
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go test -bench %s %s: %w\n%s", name, pkg, err, out)
	}
	return parseBench(string(out), name), nil
}

// parseBench reads the lines of benchmark name from go test's output: "BenchmarkName/sub-4
// N value unit value unit …", the -GOMAXPROCS suffix dropped.
func parseBench(out, name string) benchMetrics {
	m := benchMetrics{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		full, ok := strings.CutPrefix(f[0], "Benchmark"+name)
		if !ok || (full != "" && full[0] != '/' && full[0] != '-') {
			continue
		}
		if i := strings.LastIndexByte(full, '-'); i >= 0 && strings.IndexFunc(full[i+1:], func(r rune) bool { return !unicode.IsDigit(r) }) < 0 {
			full = full[:i]
		}
		sub := strings.TrimPrefix(full, "/")
		if m[sub] == nil {
			m[sub] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				m[sub][f[i+1]] = append(m[sub][f[i+1]], v)
			}
		}
	}
	return m
}

// pairwise applies f to the i-th values of a and b (the same run's), for as many runs
// as both have.
func pairwise(a, b []float64, f func(x, y float64) float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		out[i] = f(a[i], b[i])
	}
	return out
}

// The goals of section 15 (issue 40.5).
const (
	storeGoal    = 1.3    // the durable store's CPU per stage call ÷ the memory store's
	approvalGoal = 2000.0 // ns a check that needs no approval may add over one with no approval rule
	labelsGoal   = 1.2    // a check with labels and a 20-step history ÷ one without
	roundGoal    = 3.0    // a memo-hit OpenAI tool round's CPU ÷ a stage call's (issue 40.3)
)

// notRun is the row of a cost benchmark that gave no figures: m is nil when it failed
// (the notes say how), empty when this tree does not have it (yet).
func notRun(m benchMetrics, id, figure, what string) report.Row {
	why := "not run: benchmark missing"
	if m == nil {
		why = "not run: benchmark failed (see the notes)"
	}
	return report.Row{ID: id, Figure: figure, Agentd: why, Peer: "—", Ratio: "—", Goal: what}
}

// costs measures section 15, what issues 23–26 add to the path and what a gateway
// round costs, from the packages' own benchmarks run the way row 13 runs
// BenchmarkCheck_Binding: the durable store against the memory store, a check that
// needs no approval, a check with labels and history, a bundle activation against a
// directory load, and a gateway round's CPU against a stage call's. A benchmark this tree
// lacks, or one that fails, gives a "not run" row (and a failure a note), not a failed
// run.
func (b *bench) costs() error {
	runs := max(b.rounds, 3)
	type costBench struct {
		pkg, name string
		row       func(benchMetrics)
	}
	for _, c := range []costBench{
		{"./server/", "Handler_StageCallStoreCost", b.storeRows},
		{"./engine/", "Check_Approval", b.approvalRows},
		{"./engine/", "Check_Labels", b.labelsRows},
		{"./config/bundle/", "Activation", b.activationRows},
		{"./gateway/openai/", "Gateway_RoundCost", b.roundRows},
		{"./gateway/mcp/", "ToolsCall_Cost", b.mcpCallRows},
	} {
		m, err := b.goBench(c.pkg, c.name, runs, "1s")
		if err != nil {
			if b.ctx.Err() != nil {
				return err
			}
			log.Print(err)
			b.notes = append(b.notes, fmt.Sprintf("Section 15: `go test -bench %s %s` failed: %.300s", c.name, c.pkg, err))
			m = nil
		}
		c.row(m)
	}
	return nil
}

func (b *bench) storeRows(m benchMetrics) {
	figure := func(sub string) string {
		return fmt.Sprintf("In process: an after_planning call of a new request through the whole HTTP handler, %s, the bolt store (default durability) vs the memory store: "+
			"process CPU per call (server's BenchmarkHandler_StageCallStoreCost, rounds interleaved; median of %d runs)", sub, len(m.get(sub, "bolt/memory")))
	}
	for i, sub := range []string{"clients=1", "clients=32"} {
		id := fmt.Sprintf("15a%d", i+1)
		ratios := m.get(sub, "bolt/memory")
		if len(ratios) == 0 {
			b.rows["15"] = append(b.rows["15"], notRun(m, id, figure(sub), fmt.Sprintf("≤ %.1f×", storeGoal)))
			continue
		}
		r := medianOf(ratios)
		b.rows["15"] = append(b.rows["15"], report.Row{ID: id, Figure: figure(sub),
			Agentd: report.NS(medianOf(m.get(sub, "bolt-cpu-ns/call"))) + "/call", Peer: report.NS(medianOf(m.get(sub, "memory-cpu-ns/call"))) + "/call (memory)",
			Ratio: fmt.Sprintf("%.2f×", r), Goal: goal(r <= storeGoal, fmt.Sprintf("≤ %.1f×", storeGoal))})
		b.bars["15"] = append(b.bars["15"], report.Bar{Label: id + " durable store, " + sub + ": CPU per stage call vs memory", Ratio: r, Goal: storeGoal})
		if i == 0 {
			b.goals = append(b.goals, fmt.Sprintf("The durable store costs ≤ %.1f× the memory store's CPU per stage call (row 15a1): %s (%.2f×).", storeGoal, metOrNot(r <= storeGoal), r))
		}
	}
}

func (b *bench) approvalRows(m benchMetrics) {
	figure := "In process: an allowed tool_call check that needs no approval, config with an approval rule that does not match vs config without one (engine's BenchmarkCheck_Approval)"
	without, with := m.get("without_rule", "ns/op"), m.get("rule_not_matching", "ns/op")
	if len(without) == 0 || len(with) == 0 {
		b.rows["15"] = append(b.rows["15"], notRun(m, "15b", figure, fmt.Sprintf("added ≤ %s", report.NS(approvalGoal))))
		return
	}
	added := pairwise(with, without, func(x, y float64) float64 { return x - y })
	a, base := medianOf(added), medianOf(without)
	met := a <= approvalGoal
	b.rows["15"] = append(b.rows["15"], report.Row{ID: "15b", Figure: fmt.Sprintf("%s; median of %d runs, added %s–%s over them", figure, len(added), report.NS(slices.Min(added)), report.NS(slices.Max(added))),
		Agentd: report.NS(medianOf(with)) + "/check", Peer: report.NS(base) + "/check (no approval rule)", Ratio: report.Ratio(medianOf(with), base),
		Goal: goal(met, fmt.Sprintf("added %s ≤ %s", report.NS(a), report.NS(approvalGoal)))})
	b.bars["15"] = append(b.bars["15"], report.Bar{Label: "15b a check needing no approval vs no approval rule", Ratio: (base + a) / base, Goal: (base + approvalGoal) / base})
	b.goals = append(b.goals, fmt.Sprintf("A check that needs no approval adds ≤ %s (row 15b): %s (%s).", report.NS(approvalGoal), metOrNot(met), report.NS(a)))
}

func (b *bench) labelsRows(m benchMetrics) {
	figure := "In process: a check with labels and a 20-step history vs the same check without (engine's BenchmarkCheck_Labels)"
	plain, history := m.get("plain", "ns/op"), m.get("history20", "ns/op")
	if len(plain) == 0 || len(history) == 0 {
		b.rows["15"] = append(b.rows["15"], notRun(m, "15c", figure, fmt.Sprintf("≤ %.1f×", labelsGoal)))
		return
	}
	ratios := pairwise(history, plain, func(x, y float64) float64 { return x / y })
	r := medianOf(ratios)
	b.rows["15"] = append(b.rows["15"], report.Row{ID: "15c", Figure: fmt.Sprintf("%s; median of the runs' ratios over %d runs (%.2f–%.2f×)", figure, len(ratios), slices.Min(ratios), slices.Max(ratios)),
		Agentd: report.NS(medianOf(history)) + "/check", Peer: report.NS(medianOf(plain)) + "/check (no labels, no history)",
		Ratio: fmt.Sprintf("%.2f×", r), Goal: goal(r <= labelsGoal, fmt.Sprintf("≤ %.1f×", labelsGoal))})
	b.bars["15"] = append(b.bars["15"], report.Bar{Label: "15c a check with labels and 20 steps of history vs without", Ratio: r, Goal: labelsGoal})
	b.goals = append(b.goals, fmt.Sprintf("A check with labels and a 20-step history costs ≤ %.1f× one without (row 15c): %s (%.2f×).", labelsGoal, metOrNot(r <= labelsGoal), r))
}

func (b *bench) activationRows(m benchMetrics) {
	dir := m.get("directory", "ns/op")
	for i, sub := range []string{"bundle-unsigned", "bundle-signed"} {
		id := fmt.Sprintf("15d%d", i+1)
		kind := map[string]string{"bundle-unsigned": "an unsigned", "bundle-signed": "a signed"}[sub]
		figure := fmt.Sprintf("In process: a configuration going live from %s bundle (fetched from a file, verified, extracted, compiled) vs a directory reload (config/bundle's BenchmarkActivation)", kind)
		bundle := m.get(sub, "ns/op")
		if len(dir) == 0 || len(bundle) == 0 {
			b.rows["15"] = append(b.rows["15"], notRun(m, id, figure, "none set"))
			continue
		}
		r := medianOf(bundle) / medianOf(dir)
		b.rows["15"] = append(b.rows["15"], report.Row{ID: id, Figure: fmt.Sprintf("%s; median of %d runs", figure, len(bundle)),
			Agentd: report.NS(medianOf(bundle)), Peer: report.NS(medianOf(dir)) + " (directory)", Ratio: fmt.Sprintf("%.2f×", r), Goal: "none set"})
		b.bars["15"] = append(b.bars["15"], report.Bar{Label: id + " " + sub + " activation vs a directory load", Ratio: r})
	}
}

func (b *bench) roundRows(m benchMetrics) {
	figure := "In process: the CPU of a memo-hit OpenAI tool round through the gateway (the upstream answering from memory) vs an after_planning stage call through the API's handler, in turn in one loop (gateway/openai's BenchmarkGateway_RoundCost)"
	ratios := m.get("", "round/stage")
	if len(ratios) == 0 {
		b.rows["15"] = append(b.rows["15"], notRun(m, "15e", figure, fmt.Sprintf("≤ %.0f×", roundGoal)))
		return
	}
	r := medianOf(ratios)
	b.rows["15"] = append(b.rows["15"], report.Row{ID: "15e", Figure: fmt.Sprintf("%s; median of %d runs (%.2f–%.2f×)", figure, len(ratios), slices.Min(ratios), slices.Max(ratios)),
		Agentd: report.NS(medianOf(m.get("", "round-cpu-ns/op"))) + "/round", Peer: report.NS(medianOf(m.get("", "stage-cpu-ns/op"))) + "/stage call",
		Ratio: fmt.Sprintf("%.2f×", r), Goal: goal(r <= roundGoal, fmt.Sprintf("≤ %.0f×", roundGoal))})
	b.bars["15"] = append(b.bars["15"], report.Bar{Label: "15e OpenAI tool round vs a stage call: CPU", Ratio: r, Goal: roundGoal})
	b.goals = append(b.goals, fmt.Sprintf("A memo-hit OpenAI tool round costs ≤ %.0f× a stage call's CPU in process (row 15e): %s (%.2f×).", roundGoal, metOrNot(r <= roundGoal), r))
}

func (b *bench) mcpCallRows(m benchMetrics) {
	figure := "In process: the CPU a memo-hit MCP tools/call through the gateway adds over the same call made directly (official SDK client and upstream in the process on both sides, sessions of 10 calls) vs an after_planning stage call through the API's handler, in turn in one loop (gateway/mcp's BenchmarkToolsCall_Cost)"
	ratios := m.get("", "added/stage")
	if len(ratios) == 0 {
		b.rows["15"] = append(b.rows["15"], notRun(m, "15f", figure, "none set"))
		return
	}
	added := pairwise(m.get("", "gateway-cpu-ns/call"), m.get("", "direct-cpu-ns/call"), func(x, y float64) float64 { return x - y })
	r := medianOf(ratios)
	b.rows["15"] = append(b.rows["15"], report.Row{ID: "15f", Figure: fmt.Sprintf("%s; median of %d runs", figure, len(ratios)),
		Agentd: report.NS(medianOf(added)) + "/call added (" + report.NS(medianOf(m.get("", "gateway-cpu-ns/call"))) + " through the gateway, " + report.NS(medianOf(m.get("", "direct-cpu-ns/call"))) + " direct)",
		Peer:   report.NS(medianOf(m.get("", "stage-cpu-ns/op"))) + "/stage call", Ratio: fmt.Sprintf("%.2f×", r), Goal: "none set (reported as issue 40.3 asks)"})
	b.bars["15"] = append(b.bars["15"], report.Bar{Label: "15f MCP tools/call, added CPU vs a stage call", Ratio: r})
}
