package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/bench/internal/floor"
	"github.com/agentd-dev/agentd/bench/internal/load"
	"github.com/agentd-dev/agentd/bench/internal/procs"
	"github.com/agentd-dev/agentd/bench/internal/report"
)

// floorGoal is the floor goal: on a memo hit agentd spends at most this many
// times the HTTP floor's CPU per request.
const floorGoal = 2.0

// serveFloor is the driver's `floor ADDR` mode: the HTTP floor as a process of its
// own, so that /proc reads its CPU time apart from the load generator's.
func serveFloor(addr string) error { return floor.Serve(addr) }

// startSelf starts this binary in one of its server modes (floor, mcp-proxy) on a free
// loopback port: `agentd-bench MODE ADDR ARGS…`.
func (b *bench) startSelf(mode string, args ...string) (*procs.Server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	return procs.Start(procs.Spec{
		Name: mode, Addr: addr, Bin: self, Args: append([]string{mode, addr}, args...), Ready: "/readyz",
		Log: filepath.Join(b.tmp, mode+".log"),
	}, startTimeout)
}

// cheapPolicy measures sections 9 and 10: the object-lookup allow-list served by agentd
// and `opa run --server`, and the HTTP floor beside them, all three driven by the same
// load with the same bodies, runs rotating between them. On the memo hit, a fourth
// side, the same agentd on --store memory, gives row 15a3 (storeDaemonRow).
func (b *bench) cheapPolicy() error {
	s, err := b.startPair("cheap", b.agentd, nil, cheap())
	if err != nil {
		return err
	}
	defer s.stop()
	if s.floor, err = b.startSelf("floor"); err != nil {
		return err
	}
	addr, err := procs.FreeAddr()
	if err != nil {
		return err
	}
	spec := b.agentdSpec("cheap-agentd-memory", b.agentd, filepath.Join(b.tmp, "cheap-agentd"), addr)
	spec.Args = append(spec.Args, "--store", "memory")
	memory, err := procs.Start(spec, startTimeout)
	if err != nil {
		return err
	}
	defer stopServer(memory)
	for i, v := range []fixture.Variation{fixture.NewText, fixture.Unseen, fixture.NewOperations} {
		c := httpCase{steps: 3, requests: b.cheapRequests, variation: v}
		at, ot, err := s.targets(fmt.Sprintf("cheap%d", i), c)
		if err != nil {
			return err
		}
		ft := load.Target{URL: "http://" + s.floor.Addr + "/v1/hooks/after_planning", Body: at.Body, Want: at.Want}
		sides := []side{{"agentd", s.agentd, at}, {"opa", s.opa, ot}, {"floor", s.floor, ft}}
		if v == fixture.NewText {
			mt, err := agentdTarget(memory.Addr, fmt.Sprintf("cheap%d-memory", i), c)
			if err != nil {
				return err
			}
			sides = append(sides, side{"agentd-memory", memory, mt})
		}
		figs, err := b.alternate(c, sides)
		if err != nil {
			return err
		}
		a, o, f := figs[0], figs[1], figs[2]
		if v == fixture.NewText {
			b.storeDaemonRow(c, a, figs[3])
		}
		id := fmt.Sprintf("%c", 'a'+i)
		what := fmt.Sprintf("HTTP, cheap policy (object lookup, data.x.allowed[ns][agent][capability]): after_planning, 3 steps × 5,000 entries, %v; %d workers, %s req",
			v, b.concurrency, report.Count(int64(c.requests)))
		b.peerRows("9", "9"+id, what, v, a, o, "opa run --server")
		b.bars["9"] = append(b.bars["9"], report.Bar{Label: fmt.Sprintf("9%s cheap policy, 3 steps, %s: throughput vs OPA", id, v.Name()),
			Ratio: a.Throughput / o.Throughput, Goal: httpGoal(v), HigherIsBetter: true})
		if httpGoal(v) > 0 {
			b.goals = append(b.goals, fmt.Sprintf("Over HTTP, cheap policy, agentd's throughput ≥ %.1f× opa run --server, %v per request: %s (%.2f×).",
				httpGoal(v), v, metOrNot(a.Throughput/o.Throughput >= httpGoal(v)), a.Throughput/o.Throughput))
		} else {
			b.goals = append(b.goals, fmt.Sprintf("Over HTTP, cheap policy, %v per request (a memo miss every request; no goal set): agentd's throughput %.2f× opa run --server.",
				v, a.Throughput/o.Throughput))
		}
		b.floorRows(id, v, a, f)
	}
	return nil
}

// floorRows adds section 10's rows for one case: agentd's CPU per request on the cheap
// policy (a) and on the stock policy (section 2, when it ran that case) over the
// floor's (f), and the throughputs.
// storeDaemonRow is row 15a3: agentd's CPU per request on its default store (bolt)
// against the same daemon on --store memory, each a process of its own under the same
// load: unlike rows 15a1–15a2, neither side's garbage collection scans the other's heap.
func (b *bench) storeDaemonRow(c httpCase, bolt, memory sideFigures) {
	r := bolt.cpu / memory.cpu
	b.rows["15"] = append(b.rows["15"], report.Row{ID: "15a3",
		Figure: fmt.Sprintf("HTTP, cheap policy, after_planning, 3 steps, %v; %d workers, %s req: agentd's CPU per request (/proc/PID/stat) on the default store (bolt, interval) vs the same daemon on --store memory, a process each, runs alternating (rows 9a)",
			c.variation, b.concurrency, report.Count(int64(c.requests))),
		Agentd: report.NS(bolt.cpu), Peer: report.NS(memory.cpu) + " (--store memory)", Ratio: fmt.Sprintf("%.2f×", r),
		Goal: goal(r <= storeGoal, fmt.Sprintf("≤ %.1f×", storeGoal))})
	b.bars["15"] = append(b.bars["15"], report.Bar{Label: "15a3 durable store, daemons over HTTP: CPU per request vs memory", Ratio: r, Goal: storeGoal})
	b.goals = append(b.goals, fmt.Sprintf("The durable store costs ≤ %.1f× the memory store's CPU per stage call, a daemon each over HTTP (row 15a3): %s (%.2f×).", storeGoal, metOrNot(r <= storeGoal), r))
}

func (b *bench) floorRows(id string, v fixture.Variation, a, f sideFigures) {
	g := "none set"
	if v == fixture.NewText {
		g = goal(a.cpu/f.cpu <= floorGoal, fmt.Sprintf("≤ %.0f× (memo hit)", floorGoal))
		b.goals = append(b.goals, fmt.Sprintf("On a memo hit (cheap policy, %v), agentd's CPU per request ≤ %.0f× the HTTP floor's: %s (%.2f×).",
			v, floorGoal, metOrNot(a.cpu/f.cpu <= floorGoal), a.cpu/f.cpu))
	}
	what := fmt.Sprintf("HTTP floor (net/http, the same body decoded strictly into the engine's wire types, a fixed allowed answer), 3 steps, %v", v)
	floorPeer := func(x string) string { return x + " (floor)" }
	b.rows["10"] = append(b.rows["10"],
		report.Row{ID: "10" + id + "1", Figure: what + " — server CPU per request, agentd on the cheap policy (row 9" + id + "4)",
			Agentd: report.NS(a.cpu), Peer: floorPeer(report.NS(f.cpu)), Ratio: report.Ratio(a.cpu, f.cpu), Goal: g},
		report.Row{ID: "10" + id + "2", Figure: what + " — throughput, agentd on the cheap policy (row 9" + id + "1)",
			Agentd: report.Count(int64(a.Throughput)) + " req/s", Peer: floorPeer(report.Count(int64(f.Throughput)) + " req/s"),
			Ratio: report.Ratio(a.Throughput, f.Throughput), Goal: "none set"},
	)
	bar := report.Bar{Label: fmt.Sprintf("10%s1 cheap policy, %s: CPU per request vs the floor", id, v.Name()), Ratio: a.cpu / f.cpu}
	if v == fixture.NewText {
		bar.Goal = floorGoal
	}
	b.bars["10"] = append(b.bars["10"], bar)
	if stock, ok := b.stockCPU[v]; ok {
		b.rows["10"] = append(b.rows["10"], report.Row{ID: "10" + id + "3", Figure: what + " — server CPU per request, agentd on the stock policy (section 2's 3-step case)",
			Agentd: report.NS(stock), Peer: floorPeer(report.NS(f.cpu)), Ratio: report.Ratio(stock, f.cpu), Goal: "none set"})
		b.bars["10"] = append(b.bars["10"], report.Bar{Label: fmt.Sprintf("10%s3 stock policy, %s: CPU per request vs the floor", id, v.Name()), Ratio: stock / f.cpu})
	}
}
