package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/bench/internal/load"
	"github.com/agentd-dev/agentd/bench/internal/procs"
	"github.com/agentd-dev/agentd/bench/internal/report"
)

// decisionLogGoal is the bound on what decision events add to agentd's CPU
// time per request.
const decisionLogGoal = 1.10

// decisionLogCase is one configuration of the decision log measured against a daemon
// without one.
type decisionLogCase struct {
	id, name, what string
	args           []string // serve flags beyond the shared ones
}

// decisionLogCases: the worst case (every event, payload included, to a file) and the
// daemon's defaults (one JSON log line per decision, no payload, at --log-level info).
func decisionLogCases(file string) []decisionLogCase {
	return []decisionLogCase{
		{id: "12a", name: "dlog-file", what: "every event, payload included, to --decision-log-file",
			args: []string{"--log-decisions=false", "--decision-log-file", file, "--decision-log-max-bytes", fmt.Sprint(int64(1) << 40)}},
		{id: "12b", name: "dlog-default", what: "the default flags: one JSON log line per decision, no payload, --log-level info",
			args: []string{"--log-level", "info"}},
	}
}

// decisionLog measures section 12: agentd's CPU time per after_planning request with
// the decision log as each case configures it, against the same daemon with no decision
// log at all (at the same log level). Runs alternate between the servers; the median of
// each is reported.
func (b *bench) decisionLog() error {
	c := b.httpCases[0]
	c.requests = b.dlogRequests
	dir := filepath.Join(b.tmp, "dlog-agentd")
	if err := fixture.AgentdConfig(dir, b.policies, fixture.Large); err != nil {
		return err
	}
	events := filepath.Join(b.tmp, "decisions.log")
	start := func(name string, args ...string) (*procs.Server, load.Target, error) {
		addr, err := procs.FreeAddr()
		if err != nil {
			return nil, load.Target{}, err
		}
		spec := b.agentdSpec(name, b.agentd, dir, addr)
		spec.Args = append(spec.Args, args...)
		srv, err := procs.Start(spec, startTimeout)
		if err != nil {
			return nil, load.Target{}, err
		}
		body, err := fixture.AgentdBody(fixture.Plan(c.steps, fixture.Large), name, c.variation)
		if err != nil {
			stopServer(srv)
			return nil, load.Target{}, err
		}
		return srv, load.Target{URL: "http://" + srv.Addr + "/v1/hooks/after_planning", Body: body.Append, Want: []byte(`"plan":{"plan_id":"`)}, nil
	}
	for _, dc := range decisionLogCases(events) {
		// The daemon without a decision log runs at the case's log level, so that the
		// difference is the decision events alone.
		level := "warn"
		if i := slices.Index(dc.args, "--log-level"); i >= 0 {
			level = dc.args[i+1]
		}
		plain, tOff, err := start(dc.name+"-off", "--log-decisions=false", "--log-level", level)
		if err != nil {
			return err
		}
		logged, tOn, err := start(dc.name, dc.args...)
		if err != nil {
			stopServer(plain)
			return err
		}
		figures, err := b.alternate(c, []side{{dc.name + "-off", plain, tOff}, {dc.name, logged, tOn}})
		stopServer(plain)
		stopServer(logged)
		if err != nil {
			return err
		}
		cpuOff, cpuOn := figures[0].cpu, figures[1].cpu
		met := cpuOn <= decisionLogGoal*cpuOff
		b.goals = append(b.goals, fmt.Sprintf("Decision events add at most %.0f%% CPU per request, %s (row %s): %s (%+.1f%%).",
			100*(decisionLogGoal-1), dc.what, dc.id, metOrNot(met), 100*(cpuOn/cpuOff-1)))
		b.rows["12"] = append(b.rows["12"], report.Row{ID: dc.id,
			Figure: fmt.Sprintf("Decision log: agentd CPU per after_planning request (/proc/PID/stat), %v; %d workers, %s req; %s",
				c, b.concurrency, report.Count(int64(c.requests)), dc.what),
			Agentd: report.NS(cpuOn), Peer: report.NS(cpuOff) + " (no decision log)", Ratio: report.Ratio(cpuOn, cpuOff),
			Goal: goal(met, fmt.Sprintf("≤ %.2f×", decisionLogGoal))})
	}
	st, err := os.Stat(events)
	if err != nil || st.Size() == 0 {
		return fmt.Errorf("the decision log file holds nothing after the load (%v)", err)
	}
	b.notes = append(b.notes, fmt.Sprintf("Row 12a: the decision log file held %s after the measured runs and their warm-ups.", report.Bytes(st.Size())))
	return nil
}
