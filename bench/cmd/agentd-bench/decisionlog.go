package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/bench/internal/load"
	"github.com/agentd-dev/agentd/bench/internal/procs"
	"github.com/agentd-dev/agentd/bench/internal/report"
)

// decisionLogGoal is the bound on what decision events add to agentd's CPU
// time per request.
const decisionLogGoal = 1.10

// decisionLog measures section 12: agentd's CPU time per after_planning request with
// the decision log writing every event, payload included, to a file, against the same
// daemon with no decision log at all. Runs alternate between the two servers; the
// median of each is reported.
func (b *bench) decisionLog() error {
	c := b.httpCases[0]
	dir := filepath.Join(b.tmp, "dlog-agentd")
	if err := fixture.AgentdConfig(dir, b.policies, fixture.Large); err != nil {
		return err
	}
	events := filepath.Join(b.tmp, "decisions.log")
	start := func(name string, extra ...string) (*procs.Server, error) {
		addr, err := procs.FreeAddr()
		if err != nil {
			return nil, err
		}
		spec := b.agentdSpec(name, b.agentd, dir, addr)
		spec.Args = append(spec.Args, append([]string{"--log-decisions=false"}, extra...)...)
		return procs.Start(spec, startTimeout)
	}
	plain, err := start("dlog-off")
	if err != nil {
		return err
	}
	defer stopServer(plain)
	logged, err := start("dlog-file", "--decision-log-file", events, "--decision-log-max-bytes", fmt.Sprint(int64(1)<<40))
	if err != nil {
		return err
	}
	defer stopServer(logged)
	target := func(s *procs.Server, tag string) (load.Target, error) {
		body, err := fixture.AgentdBody(fixture.Plan(c.steps, fixture.Large), tag, c.variation)
		if err != nil {
			return load.Target{}, err
		}
		return load.Target{URL: "http://" + s.Addr + "/v1/hooks/after_planning", Body: body.Append, Want: []byte(`"plan":{"plan_id":"`)}, nil
	}
	tOff, err := target(plain, "dlog-off")
	if err != nil {
		return err
	}
	tOn, err := target(logged, "dlog-file")
	if err != nil {
		return err
	}
	var off, on []float64 // server CPU per measured request, ns
	for r := range b.httpRounds {
		sides := []string{"off", "file"}
		if r%2 == 1 {
			sides = []string{"file", "off"}
		}
		for _, side := range sides {
			t, srv := tOff, plain
			if side == "file" {
				t, srv = tOn, logged
			}
			res, cpu, err := b.measure(t, srv, b.loadOptions(c.requests, c.requests/10))
			if err != nil {
				return fmt.Errorf("decision log %s: %w", side, err)
			}
			log.Printf("decision log %s, round %d: %v; server CPU %s/req", side, r+1, res, report.NS(cpu))
			if side == "off" {
				off = append(off, cpu)
			} else {
				on = append(on, cpu)
			}
		}
	}
	st, err := os.Stat(events)
	if err != nil || st.Size() == 0 {
		return fmt.Errorf("the decision log file holds nothing after the load (%v)", err)
	}
	cpuOff, cpuOn := medianOf(off), medianOf(on)
	met := cpuOn <= decisionLogGoal*cpuOff
	b.goals = append(b.goals, fmt.Sprintf("Decision events add at most %.0f%% CPU per request: %s (%+.1f%%).",
		100*(decisionLogGoal-1), metOrNot(met), 100*(cpuOn/cpuOff-1)))
	b.rows["12"] = append(b.rows["12"], report.Row{ID: "12",
		Figure: fmt.Sprintf("Decision log: agentd CPU per after_planning request (/proc/PID/stat), %v; %d workers, %s req; every event to --decision-log-file",
			c, b.concurrency, report.Count(int64(c.requests))),
		Agentd: report.NS(cpuOn), Peer: report.NS(cpuOff) + " (no decision log)", Ratio: report.Ratio(cpuOn, cpuOff),
		Goal: goal(met, fmt.Sprintf("≤ %.2f×", decisionLogGoal))})
	b.notes = append(b.notes, fmt.Sprintf("Row 12: the decision log file held %s after the measured runs and their warm-ups.", report.Bytes(st.Size())))
	return nil
}
