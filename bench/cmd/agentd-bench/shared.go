package main

import (
	"errors"
	"fmt"
	"log"
	"math"
	"path/filepath"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/bench/internal/load"
	"github.com/agentd-dev/agentd/bench/internal/procs"
	"github.com/agentd-dev/agentd/bench/internal/redisstat"
	"github.com/agentd-dev/agentd/bench/internal/report"
)

// countedRequests is the length of the load during which Redis commands are counted
// (MONITOR slows the server, so CPU is measured in a separate load).
const countedRequests = 500

// sharedStore measures section 11, the inputs of bench/README.md's Scale section: agentd
// on the cheap policy with request state and records in Redis (--store), its CPU and
// Redis's CPU per request, and the Redis commands (round trips) per request.
func (b *bench) sharedStore() error {
	if b.redis == "" {
		b.notes = append(b.notes, "Section 11 (the Redis store) did not run: no -redis URL (make bench runs it with a private Redis from scripts/redis.sh).")
		return nil
	}
	redisAddr, err := redisstat.Addr(b.redis)
	if err != nil {
		return err
	}
	dir := filepath.Join(b.tmp, "shared-agentd")
	if err := fixture.CheapAgentdConfig(dir, fixture.Large); err != nil {
		return err
	}
	addr, err := procs.FreeAddr()
	if err != nil {
		return err
	}
	spec := b.agentdSpec("shared-agentd", b.agentd, dir, addr)
	spec.Args = append(spec.Args, "--store", b.redis)
	srv, err := procs.Start(spec, startTimeout)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			log.Print(err)
		}
	}()
	for i, v := range []fixture.Variation{fixture.NewText, fixture.NewOperations} {
		c := httpCase{steps: 3, requests: b.cheapRequests / 2, variation: v}
		t, err := agentdTarget(srv.Addr, fmt.Sprintf("shared%d", i), c)
		if err != nil {
			return err
		}
		var redisBefore time.Duration
		var redisErr error
		opts := b.loadOptions(c.requests, c.requests/10)
		opts.BeforeMeasure = func() { redisBefore, redisErr = redisstat.CPU(redisAddr) }
		res, cpu, err := b.measure(t, srv, opts)
		if err != nil {
			return fmt.Errorf("%v: %w", c, err)
		}
		redisAfter, err := redisstat.CPU(redisAddr)
		if err = errors.Join(redisErr, err); err != nil {
			return err
		}
		redisCPU := float64((redisAfter - redisBefore).Nanoseconds()) / float64(res.Requests)
		mon, err := redisstat.StartMonitor(b.ctx, redisAddr)
		if err != nil {
			return err
		}
		_, err = load.Run(b.ctx, t, b.loadOptions(countedRequests, 0))
		commands := float64(mon.Stop()) / float64(countedRequests)
		if err != nil {
			return err
		}
		log.Printf("Redis store, %v: %v; agentd CPU %s/req, Redis CPU %s/req, %.1f Redis commands/req", c, res, report.NS(cpu), report.NS(redisCPU), commands)
		b.scale[v] = scaleInputs{agentdCPU: cpu, redisCPU: redisCPU, commands: commands}
		id := fmt.Sprintf("11%c", 'a'+i)
		what := fmt.Sprintf("Redis store (--store redis://, loopback), cheap policy, 3 steps, %v; %d workers, %s req", v, b.concurrency, report.Count(int64(c.requests)))
		b.rows["11"] = append(b.rows["11"],
			report.Row{ID: id + "1", Figure: what + " — throughput", Agentd: report.Count(int64(res.Throughput)) + " req/s", Peer: "—", Ratio: "—", Goal: "none set"},
			report.Row{ID: id + "2", Figure: what + " — agentd CPU per request", Agentd: report.NS(cpu), Peer: "—", Ratio: "—", Goal: "none set"},
			report.Row{ID: id + "3", Figure: what + " — Redis server CPU per request (INFO cpu)", Agentd: report.NS(redisCPU), Peer: "—", Ratio: "—", Goal: "none set"},
			report.Row{ID: id + "4", Figure: fmt.Sprintf("%s — Redis commands (round trips) per request (MONITOR over %d requests)", what, countedRequests),
				Agentd: fmt.Sprintf("%.1f", commands), Peer: "—", Ratio: "—", Goal: "none set"},
		)
	}
	return nil
}

// scaleInputs are the measured per-decision costs the Scale section works from.
type scaleInputs struct {
	agentdCPU, redisCPU float64 // ns per decision
	commands            float64 // Redis commands (round trips) per decision
}

// Scale assumptions: replicas of replicaCores cores and Redis shards of one thread
// each, both run at no more than headroom of their CPU.
const (
	replicaCores = 2
	headroom     = 0.6
)

// scaleRates are the decision rates the Scale section sizes for.
var scaleRates = []float64{1_000, 10_000, 50_000}

// sizing returns the replicas and Redis shards rate decisions per second need.
func (s scaleInputs) sizing(rate float64) (replicas, shards int) {
	replicas = int(math.Ceil(rate * s.agentdCPU / 1e9 / (replicaCores * headroom)))
	shards = int(math.Ceil(rate * s.redisCPU / 1e9 / headroom))
	return replicas, shards
}

// renderScale writes the Scale section of latest.md from section 11's figures.
func (b *bench) renderScale(p func(string, ...any)) {
	if len(b.scale) == 0 {
		return
	}
	p("\n## Scale on paper\n\nFrom section 11's figures (the Redis store on loopback): replicas of %d cores and Redis shards "+
		"(one thread each) kept at or below %.0f%% CPU. Each Redis command is one round trip; those on the request's path add a "+
		"network round trip each to its latency (on loopback next to nothing; across a data-centre network about 0.1–0.5 ms each). agentd's Redis store speaks to one Redis server, not a cluster: the shard counts are what a "+
		"sharded store would need, and one Redis thread bounds the whole deployment at the rate in the last column.\n\n", replicaCores, 100*headroom)
	p("| plans | agentd CPU/decision | Redis CPU/decision | round trips | ")
	for _, r := range scaleRates {
		p("%s/s: replicas · shards | ", report.Count(int64(r)))
	}
	p("one Redis thread's ceiling |\n|---|---:|---:|---:|")
	for range scaleRates {
		p("---:|")
	}
	p("---:|\n")
	for _, v := range []fixture.Variation{fixture.NewText, fixture.NewOperations} {
		s, ok := b.scale[v]
		if !ok {
			continue
		}
		p("| %s | %s | %s | %.1f | ", v.Name(), report.NS(s.agentdCPU), report.NS(s.redisCPU), s.commands)
		for _, r := range scaleRates {
			replicas, shards := s.sizing(r)
			p("%d · %d | ", replicas, shards)
		}
		p("%s decisions/s |\n", report.Count(int64(headroom*1e9/s.redisCPU)))
	}
}
