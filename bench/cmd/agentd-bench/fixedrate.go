package main

import (
	"context"
	"fmt"
	"log"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/bench/internal/load"
	"github.com/agentd-dev/agentd/bench/internal/mcplat"
	"github.com/agentd-dev/agentd/bench/internal/procs"
	"github.com/agentd-dev/agentd/bench/internal/report"
)

// Section 14's goal (issue 40.1): what agentd adds at p99 over a plain proxy hop, at
// fixedRateGoalRate requests per second.
const (
	fixedRateGoal     = 150 * time.Microsecond
	fixedRateGoalRate = 1000
)

// openWorkers bound each side's requests in flight in section 14: far more than a
// fixed rate of 1,000/s with millisecond answers keeps busy, so that requests wait for
// a worker only when a side stalls (and then their latency shows it).
const openWorkers = 32

// openSide is one side of a fixed-rate comparison: how to send to it, and what to close.
type openSide struct {
	name  string
	send  load.Sender
	idle  func(context.Context, int) error
	close func()
}

// fixedRate measures section 14: each gateway at fixed request rates, open loop (see
// load.OpenLoop), against its upstream directly and a plain proxy hop. Per rate, the
// three sides take turns in slices of -open-requests requests at that rate, the first
// rotating every round (-open-rounds rounds, after a warm-up slice each), so that all
// see the same moments of the shared machine; each side's latencies are pooled over
// its slices.
func (b *bench) fixedRate() error {
	oa, stop, err := b.openAISides()
	if err != nil {
		return err
	}
	c := gatewayCases[0] // a tool round answered by the decision memo
	body, err := fixture.GatewayBody(c.question)
	if err != nil {
		stop()
		return err
	}
	var sides []openSide
	for n, t := range oa.targets(c, body) {
		send, closeConns, err := t.Sender(openWorkers)
		if err != nil {
			stop()
			return err
		}
		sides = append(sides, openSide{name: sideNames[n], send: send, close: closeConns})
	}
	err = b.fixedRateRows(oa.srv, "OpenAI gateway: a tool round on a decision-memo hit (before_planning, after_planning, one tool_call check)", sides)
	closeSides(sides)
	stop()
	if err != nil {
		return err
	}

	urls, srv, stop, err := b.mcpSides()
	if err != nil {
		return err
	}
	defer stop()
	sides = sides[:0]
	defer func() { closeSides(sides) }()
	for n, url := range urls {
		s, err := mcplat.OpenSessions(b.ctx, url, openWorkers, b.mcpCalls)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, srv.LogTail(20))
		}
		sides = append(sides, openSide{name: sideNames[n], send: s.Send, idle: s.Idle, close: func() {
			if err := s.Close(); err != nil {
				log.Print(err)
			}
		}})
	}
	return b.fixedRateRows(srv, fmt.Sprintf("MCP gateway: tools/call over streamable HTTP on a decision-memo hit, sessions of %d calls", b.mcpCalls), sides)
}

// sideNames name the sides of a fixed-rate comparison, in their order.
var sideNames = []string{"direct", "plain proxy", "agentd"}

func closeSides(sides []openSide) {
	for _, s := range sides {
		s.close()
	}
}

// fixedRateRows measures sides (direct, proxy, agentd) at every -open-rates rate and
// adds section 14's rows for them: 14a1–14a5 for the first gateway and rate, 14b… for
// the next. srv is the agentd the last side reaches, whose CPU time per request over
// its slices is read from /proc.
func (b *bench) fixedRateRows(srv *procs.Server, what string, sides []openSide) error {
	for _, rate := range b.openRates {
		run := func(s openSide, requests int) (load.OpenResult, error) {
			o := load.OpenOptions{Rate: rate, Requests: requests, SeqBase: b.seq, Workers: openWorkers, Deadline: 3 * time.Minute, Idle: s.idle}
			b.seq += requests
			r, err := load.OpenLoop(b.ctx, s.send, o)
			if err != nil {
				return r, fmt.Errorf("%s at %.0f/s, %s: %w", what, rate, s.name, err)
			}
			return r, nil
		}
		for _, s := range sides {
			if _, err := run(s, max(1, b.openRequests/10)); err != nil {
				return err
			}
		}
		runs := make([][]load.OpenResult, len(sides))
		var agentdCPU time.Duration
		for r := range b.openRounds {
			for k := range sides {
				n := (r + k) % len(sides)
				before, err := srv.CPUTime()
				if err != nil {
					return err
				}
				res, err := run(sides[n], b.openRequests)
				if err != nil {
					return err
				}
				after, err := srv.CPUTime()
				if err != nil {
					return err
				}
				if n == len(sides)-1 {
					agentdCPU += after - before
				}
				runs[n] = append(runs[n], res)
			}
		}
		merged := make([]load.OpenResult, len(runs))
		for n, rs := range runs {
			merged[n] = load.Merge(rs...)
			log.Printf("fixed rate, %s, %s: %v", what, sideNames[n], merged[n])
		}
		d, p, g := merged[0], merged[1], merged[2]
		cpu := float64(agentdCPU.Nanoseconds()) / float64(len(g.Latencies))
		log.Printf("fixed rate, %s, at %.0f/s: agentd CPU %s/req", what, rate, report.NS(cpu))
		b.addFixedRateRows(fmt.Sprintf("14%c", 'a'+len(b.rows["14"])/5), what, rate, d, p, g, cpu)
	}
	return nil
}

// addFixedRateRows adds the rows of one gateway at one rate: p50, p99 and p99.9 through
// agentd against the upstream directly, what agentd adds over the plain hop, the rate
// each side sustained, and agentd's CPU per request (ns).
func (b *bench) addFixedRateRows(id, what string, rate float64, d, p, g load.OpenResult, cpu float64) {
	prefix := fmt.Sprintf("%s — fixed rate %s req/s, open loop (latency from each request's due time), %s req per side — ",
		what, report.Count(int64(rate)), report.Count(int64(len(g.Latencies))))
	for i, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p99", 0.99}, {"p99.9", 0.999}} {
		gq, dq, pq := g.Quantile(q.q), d.Quantile(q.q), p.Quantile(q.q)
		share := gq - pq
		verdict := "none set"
		if q.name == "p99" && rate == fixedRateGoalRate {
			verdict = b.fixedRateVerdict(fmt.Sprintf("%s%d", id, i+1), id+"4", share, pq-dq, d, p, g)
		}
		b.rows["14"] = append(b.rows["14"], report.Row{
			ID: fmt.Sprintf("%s%d", id, i+1), Figure: prefix + q.name + " latency, through agentd vs the upstream directly and through the plain proxy",
			Agentd: fmt.Sprintf("%s (%s over direct, %s over the hop)", report.Duration(gq), report.Duration(gq-dq), report.Duration(share)),
			Peer:   fmt.Sprintf("%s direct, %s through the proxy", report.Duration(dq), report.Duration(pq)),
			Ratio:  report.Ratio(float64(gq), float64(pq)), Goal: verdict,
		})
	}
	sustained := func(r load.OpenResult) string {
		word := "sustained"
		if !r.Sustained() {
			word = "**not sustained**"
		}
		return fmt.Sprintf("%s req/s, %d late: %s", report.Count(int64(r.Achieved)), r.Late, word)
	}
	b.rows["14"] = append(b.rows["14"], report.Row{
		ID: id + "4", Figure: prefix + "the rate achieved (completed over the time to the last answer; late: started > 1 ms after due; sustained: ≥ 95% of the rate, ≤ 1% late)",
		Agentd: sustained(g), Peer: "direct " + sustained(d) + "; proxy " + sustained(p), Ratio: "—", Goal: "the rate is sustained",
	}, report.Row{
		ID: id + "5", Figure: prefix + "agentd's CPU time per request through it (/proc/PID/stat, over its slices)",
		Agentd: report.NS(cpu), Peer: "—", Ratio: "—", Goal: "lower is better",
	})
}

// fixedRateVerdict judges section 14's goal on row (agentd's share over the plain hop
// at p99, share; the hop's own cost over the direct call, hop) and adds it to the
// goals. The goal is judged only where the machine kept the schedule: when the direct
// call or the plain proxy did not sustain the rate, every figure is queueing on a
// saturated machine and the row is not judged; when only agentd did not, it is not met.
func (b *bench) fixedRateVerdict(row, rateRow string, share, hop time.Duration, d, p, g load.OpenResult) string {
	target := fmt.Sprintf("agentd's share over the hop %s ≤ %s", report.Duration(share), report.Duration(fixedRateGoal))
	head := fmt.Sprintf("At %s req/s, agentd adds ≤ %s at p99 over a plain proxy hop (row %s): ", report.Count(fixedRateGoalRate), report.Duration(fixedRateGoal), row)
	if !d.Sustained() || !p.Sustained() {
		b.goals = append(b.goals, head+fmt.Sprintf("**not judged**: the machine did not sustain the rate for the direct call or the plain proxy (row %s; agentd's share measured %s).", rateRow, report.Duration(share)))
		return target + ": **not judged** (rate not sustained, row " + rateRow + ")"
	}
	met := g.Sustained() && share <= fixedRateGoal
	b.goals = append(b.goals, head+fmt.Sprintf("%s (%s; the hop itself adds %s over calling the upstream directly; agentd sustained the rate: %v).",
		metOrNot(met), report.Duration(share), report.Duration(hop), g.Sustained()))
	return goal(met, target)
}

// parseRates parses -open-rates: positive request rates, comma-separated.
func parseRates(spec string) ([]float64, error) {
	var out []float64
	for _, item := range strings.Split(spec, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(item), 64)
		if err != nil || !(r > 0) || math.IsInf(r, 0) { // !(r > 0) is true for NaN too
			return nil, fmt.Errorf("-open-rates: bad rate %q: want a positive number of requests per second", item)
		}
		out = append(out, r)
	}
	return out, nil
}
