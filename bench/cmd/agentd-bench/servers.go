package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/bench/internal/load"
	"github.com/agentd-dev/agentd/bench/internal/procs"
	"github.com/agentd-dev/agentd/bench/internal/prof"
	"github.com/agentd-dev/agentd/bench/internal/reloadlat"
	"github.com/agentd-dev/agentd/bench/internal/report"
)

// httpGoal is the HTTP goal for v: agentd's plan-review throughput is at least
// this many times `opa run --server`'s (0: no goal; the identical plan shows the memo
// effect, plans of unseen operations what a miss costs).
func httpGoal(v fixture.Variation) float64 {
	switch v {
	case fixture.NewText:
		return 2
	case fixture.Unseen:
		return 1.5
	}
	return 0
}

// startTimeout bounds a server's start-up.
const startTimeout = 60 * time.Second

func buildProfiling(c *config, out, tmp string) error {
	return prof.BuildAgentd(c.goBin, c.repo, out, tmp)
}

// agentdSpec serves dir with bin on its default store, a bolt file in a data
// directory of its own. Per-request logging is off (warn): agentd logs one info line
// per stage call, and OPA runs with its access log off too.
func (b *bench) agentdSpec(name, bin, dir, addr string) procs.Spec {
	return procs.Spec{
		Name: name, Addr: addr, Bin: bin, Ready: "/readyz",
		Args: []string{"serve", "--config", dir, "--addr", addr, "--log-level", "warn", "--data-dir", filepath.Join(b.tmp, name+".data")},
		Log:  filepath.Join(b.tmp, name+".log"),
	}
}

// opaSpec serves the policies and data file with the pinned OPA. --log-level error
// turns off its two access-log lines per request; --skip-version-check keeps it off
// the network.
func (b *bench) opaSpec(name, addr, policies, data string, extra ...string) procs.Spec {
	args := append([]string{"run", "--server", "--addr", addr, "--log-level", "error", "--skip-version-check"}, extra...)
	return procs.Spec{
		Name: name, Addr: addr, Bin: b.opa, Ready: "/health",
		Args: append(args, policies, data),
		Log:  filepath.Join(b.tmp, name+".log"),
	}
}

// httpCase is one HTTP comparison: a plan of steps steps against the 5,000-entry
// allow-list, requests measured requests per run, the plan varied per request as
// variation says.
type httpCase struct {
	steps, requests int
	variation       fixture.Variation
}

func (c httpCase) String() string {
	return fmt.Sprintf("%d steps × 5,000 entries, %v per request", c.steps, c.variation)
}

func parseHTTPCases(spec string) ([]httpCase, error) {
	var out []httpCase
	for _, item := range strings.Split(spec, ",") {
		parts := strings.Split(strings.TrimSpace(item), ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("bad HTTP case %q: want steps:identical|newtext|unseen|newops:requests", item)
		}
		v, err := fixture.ParseVariation(parts[1])
		if err != nil {
			return nil, fmt.Errorf("bad HTTP case %q: %w", item, err)
		}
		steps, err1 := strconv.Atoi(parts[0])
		requests, err2 := strconv.Atoi(parts[2])
		if err1 != nil || err2 != nil || steps <= 0 || requests <= 0 {
			return nil, fmt.Errorf("bad HTTP case %q", item)
		}
		out = append(out, httpCase{steps: steps, requests: requests, variation: v})
	}
	return out, nil
}

// served is a policy over the 5,000-entry allow-list as each server loads it.
type served struct {
	agentdConfig func(dir string) error
	opaDir       func(dir string) (policyDir, dataFile string, err error)
	opaPath      string // the decision in OPA's data API
}

// stock is the repository's allow-list policy, data.agentd.plan.
func (b *bench) stock() served {
	return served{
		agentdConfig: func(dir string) error { return fixture.AgentdConfig(dir, b.policies, fixture.Large) },
		opaDir:       func(dir string) (string, string, error) { return fixture.OPADir(dir, b.policies, fixture.Large) },
		opaPath:      "/v1/data/agentd/plan",
	}
}

// cheap is the object-lookup allow-list, data.bench.cheap.
func cheap() served {
	return served{
		agentdConfig: func(dir string) error { return fixture.CheapAgentdConfig(dir, fixture.Large) },
		opaDir:       func(dir string) (string, string, error) { return fixture.CheapOPADir(dir, fixture.Large) },
		opaPath:      fixture.CheapPath,
	}
}

// servers are agentd and OPA serving the same policy and 5,000-entry allow-list, and
// optionally the HTTP floor.
type servers struct {
	agentd, opa, floor *procs.Server
	opaPath            string
}

func (s *servers) stop() {
	for _, p := range []*procs.Server{s.agentd, s.opa, s.floor} {
		if p != nil {
			if err := p.Stop(); err != nil {
				log.Print(err)
			}
		}
	}
}

// startPair writes the configs and starts agentd (bin, with env) and OPA (with
// opaExtra flags).
func (b *bench) startPair(tag, bin string, env []string, p served, opaExtra ...string) (*servers, error) {
	agentdDir := filepath.Join(b.tmp, tag+"-agentd")
	if err := p.agentdConfig(agentdDir); err != nil {
		return nil, err
	}
	policyDir, dataFile, err := p.opaDir(filepath.Join(b.tmp, tag+"-opa"))
	if err != nil {
		return nil, err
	}
	s := &servers{opaPath: p.opaPath}
	aAddr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	spec := b.agentdSpec(tag+"-agentd", bin, agentdDir, aAddr)
	spec.Env = env
	if s.agentd, err = procs.Start(spec, startTimeout); err != nil {
		return nil, err
	}
	oAddr, err := procs.FreeAddr()
	if err != nil {
		s.stop()
		return nil, err
	}
	if s.opa, err = procs.Start(b.opaSpec(tag+"-opa", oAddr, policyDir, dataFile, opaExtra...), startTimeout); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// targets returns the load targets of c on s: agentd's after_planning and OPA's
// data API, with the same plan, varied alike.
func (s *servers) targets(tag string, c httpCase) (agentd, opa load.Target, err error) {
	if agentd, err = agentdTarget(s.agentd.Addr, tag, c); err != nil {
		return load.Target{}, load.Target{}, err
	}
	ob, err := fixture.OPABody(fixture.Plan(c.steps, fixture.Large), tag, c.variation)
	if err != nil {
		return load.Target{}, load.Target{}, err
	}
	opa = load.Target{URL: "http://" + s.opa.Addr + s.opaPath, Body: ob.Append, Want: []byte(`"allow":true`)}
	return agentd, opa, nil
}

// agentdTarget is the after_planning load of c on the agentd serving at addr.
func agentdTarget(addr, tag string, c httpCase) (load.Target, error) {
	body, err := fixture.AgentdBody(fixture.Plan(c.steps, fixture.Large), tag, c.variation)
	if err != nil {
		return load.Target{}, err
	}
	return load.Target{URL: "http://" + addr + "/v1/hooks/after_planning", Body: body.Append, Want: []byte(`"plan":{"plan_id":"`)}, nil
}

func (b *bench) loadOptions(requests, warmup int) load.Options {
	base := b.seq
	b.seq += requests + warmup
	return load.Options{Concurrency: b.concurrency, Requests: requests, Warmup: warmup, SeqBase: base, Deadline: 3 * time.Minute}
}

// http measures section 2: every case against one agentd and one OPA server, runs
// alternating between the two.
func (b *bench) http() error {
	s, err := b.startPair("http", b.agentd, nil, b.stock())
	if err != nil {
		return err
	}
	defer s.stop()
	worst := map[fixture.Variation]float64{}
	for i, c := range b.httpCases {
		at, ot, err := s.targets(fmt.Sprintf("c%d", i), c)
		if err != nil {
			return err
		}
		figs, err := b.alternate(c, []side{{"agentd", s.agentd, at}, {"opa", s.opa, ot}})
		if err != nil {
			return err
		}
		a, o := figs[0], figs[1]
		if c.steps == 3 {
			b.stockCPU[c.variation] = a.cpu
		}
		if ratio := a.Throughput / o.Throughput; c.variation != fixture.Identical {
			if w, ok := worst[c.variation]; !ok || ratio < w {
				worst[c.variation] = ratio
			}
		}
		what := fmt.Sprintf("HTTP: after_planning, %v; %d workers, %s req", c, b.concurrency, report.Count(int64(c.requests)))
		b.peerRows("2", fmt.Sprintf("2%c", 'a'+i), what, c.variation, a, o, "opa run --server")
		if c.variation != fixture.Identical {
			b.bars["2"] = append(b.bars["2"], report.Bar{Label: fmt.Sprintf("2%c stock policy, %d steps, %s: throughput vs OPA", 'a'+i, c.steps, c.variation.Name()),
				Ratio: a.Throughput / o.Throughput, Goal: httpGoal(c.variation), HigherIsBetter: true})
		}
	}
	for _, v := range []fixture.Variation{fixture.NewText, fixture.Unseen} {
		if w, ok := worst[v]; ok {
			b.goals = append(b.goals, fmt.Sprintf("Over HTTP, stock policy, agentd's throughput ≥ %.1f× opa run --server, %v per request: %s (worst case %.2f×).",
				httpGoal(v), v, metOrNot(w >= httpGoal(v)), w))
		}
	}
	if w, ok := worst[fixture.NewOperations]; ok {
		b.goals = append(b.goals, fmt.Sprintf("Over HTTP, stock policy, %v per request (a memo miss every request; no goal set): agentd's throughput %.2f× opa run --server in the worst case.",
			fixture.NewOperations, w))
	}
	return nil
}

// peerRows adds the four rows of one HTTP case of agentd (a) against a peer (o):
// throughput, p50 and p99 latency and server CPU per request.
func (b *bench) peerRows(section, id, what string, v fixture.Variation, a, o sideFigures, peer string) {
	g := "none set (memo miss)"
	switch want := httpGoal(v); {
	case want > 0:
		g = goal(a.Throughput/o.Throughput >= want, fmt.Sprintf("≥ %.1f×", want))
	case v == fixture.Identical:
		g = "memo effect, not the goal"
	}
	b.rows[section] = append(b.rows[section],
		report.Row{ID: id + "1", Figure: what + " — throughput",
			Agentd: report.Count(int64(a.Throughput)) + " req/s", Peer: report.Count(int64(o.Throughput)) + " req/s (" + peer + ")",
			Ratio: report.Ratio(a.Throughput, o.Throughput), Goal: g},
		report.Row{ID: id + "2", Figure: what + " — p50 latency",
			Agentd: report.Duration(a.P50), Peer: report.Duration(o.P50), Ratio: report.Ratio(float64(a.P50), float64(o.P50)), Goal: "lower is better"},
		report.Row{ID: id + "3", Figure: what + " — p99 latency",
			Agentd: report.Duration(a.P99), Peer: report.Duration(o.P99), Ratio: report.Ratio(float64(a.P99), float64(o.P99)), Goal: "lower is better"},
		report.Row{ID: id + "4", Figure: what + " — server CPU per request (/proc/PID/stat)",
			Agentd: report.NS(a.cpu), Peer: report.NS(o.cpu), Ratio: report.Ratio(a.cpu, o.cpu), Goal: "lower is better"},
	)
}

// side is one server of an HTTP comparison and its load target.
type side struct {
	name string
	srv  *procs.Server
	t    load.Target
}

// sideFigures are one side's medians over the runs of a case.
type sideFigures struct {
	load.Result
	cpu float64 // server CPU per measured request, ns
}

// alternate runs c's load against every side b.httpRounds times, the order rotating
// from round to round, and returns each side's medians in the order of sides.
func (b *bench) alternate(c httpCase, sides []side) ([]sideFigures, error) {
	results := make([][]load.Result, len(sides))
	cpus := make([][]float64, len(sides))
	for r := range b.httpRounds {
		for k := range sides {
			i := (k + r) % len(sides)
			sd := sides[i]
			res, cpu, err := b.measure(sd.t, sd.srv, b.loadOptions(c.requests, c.requests/10))
			if err != nil {
				return nil, fmt.Errorf("%v, %s: %w", c, sd.name, err)
			}
			log.Printf("%v, %s, round %d: %v; server CPU %s/req", c, sd.name, r+1, res, report.NS(cpu))
			results[i], cpus[i] = append(results[i], res), append(cpus[i], cpu)
		}
	}
	out := make([]sideFigures, len(sides))
	for i := range sides {
		out[i] = sideFigures{Result: medianResult(results[i]), cpu: medianOf(cpus[i])}
	}
	return out, nil
}

// measure runs a load against srv and returns, besides the result, the server's CPU
// time per measured request in nanoseconds. An opts.BeforeMeasure runs too.
func (b *bench) measure(t load.Target, srv *procs.Server, opts load.Options) (load.Result, float64, error) {
	var before time.Duration
	var cpuErr error
	also := opts.BeforeMeasure
	opts.BeforeMeasure = func() {
		if also != nil {
			also()
		}
		before, cpuErr = srv.CPUTime()
	}
	res, err := load.Run(b.ctx, t, opts)
	if err != nil {
		return res, 0, err
	}
	after, err := srv.CPUTime()
	if err = errors.Join(cpuErr, err); err != nil {
		return res, 0, err
	}
	return res, float64((after - before).Nanoseconds()) / float64(res.Requests), nil
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// medianResult takes the median of each figure over the runs separately.
func medianResult(rs []load.Result) load.Result {
	pick := func(f func(load.Result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		slices.Sort(xs)
		if n := len(xs); n%2 == 0 {
			return (xs[n/2-1] + xs[n/2]) / 2
		}
		return xs[len(xs)/2]
	}
	return load.Result{
		Requests:   rs[0].Requests,
		Throughput: pick(func(r load.Result) float64 { return r.Throughput }),
		P50:        time.Duration(pick(func(r load.Result) float64 { return float64(r.P50) })),
		P99:        time.Duration(pick(func(r load.Result) float64 { return float64(r.P99) })),
	}
}

// httpProfiles profiles both servers under the load of the first HTTP case: agentd's
// profiling build (pprof on its own loopback port) and OPA with --pprof.
func (b *bench) httpProfiles() error {
	c := b.httpCases[0]
	pprofAgentd := filepath.Join(b.tmp, "agentd-pprof")
	log.Print("building the profiling agentd (go build -overlay)")
	if err := buildProfiling(b.config, pprofAgentd, b.tmp); err != nil {
		return err
	}
	pprofAddr, err := procs.FreeAddr()
	if err != nil {
		return err
	}
	s, err := b.startPair("prof", pprofAgentd, []string{"AGENTD_BENCH_PPROF=" + pprofAddr}, b.stock(), "--pprof")
	if err != nil {
		return err
	}
	defer s.stop()
	at, ot, err := s.targets("prof", c)
	if err != nil {
		return err
	}
	agentdCPU := filepath.Join(b.results, "http-agentd.cpu.pprof")
	agentdAllocs := filepath.Join(b.results, "http-agentd.allocs.pprof")
	opaCPU := filepath.Join(b.results, "http-opa.cpu.pprof")
	opaAllocs := filepath.Join(b.results, "http-opa.allocs.pprof")
	agentdMutex := filepath.Join(b.results, "http-agentd.mutex.pprof")
	nAgentd, err := b.profileUnderLoad(at, pprofAddr, map[string]string{
		"profile": agentdCPU, "allocs": agentdAllocs, "mutex": agentdMutex,
	})
	if err != nil {
		return fmt.Errorf("agentd: %w", err)
	}
	nOPA, err := b.profileUnderLoad(ot, s.opa.Addr, map[string]string{"profile": opaCPU, "allocs": opaAllocs})
	if err != nil {
		return fmt.Errorf("opa: %w", err)
	}
	about := fmt.Sprintf("agentd serve (profiling build), POST /v1/hooks/after_planning, %v, %d workers", c, b.concurrency)
	opaAbout := fmt.Sprintf("opa run --server --pprof, POST /v1/data/agentd/plan, %v, %d workers", c, b.concurrency)
	return b.summarize(
		profileSpec{title: "HTTP, agentd — CPU", about: about, file: agentdCPU, ops: nAgentd, top: prof.TopOptions{Nodes: 25}},
		profileSpec{title: "HTTP, agentd — allocations (objects)", about: about, file: agentdAllocs, ops: nAgentd,
			top: prof.TopOptions{Nodes: 25, SampleIndex: "alloc_objects"}},
		profileSpec{title: "HTTP, agentd — lock contention (mutex, delay)", about: about, file: agentdMutex,
			top: prof.TopOptions{Nodes: 12, SampleIndex: "delay"}, noBreakdown: true},
		profileSpec{title: "HTTP, opa run --server — CPU", about: opaAbout, file: opaCPU, ops: nOPA, top: prof.TopOptions{Nodes: 15}},
		profileSpec{title: "HTTP, opa run --server — allocations (objects)", about: opaAbout, file: opaAllocs, ops: nOPA,
			top: prof.TopOptions{Nodes: 15, SampleIndex: "alloc_objects"}},
	)
}

// profileUnderLoad warms the server up, then fetches the profiles of kinds (pprof
// profile name → file; "profile" is the CPU profile), b.profile long each, while the
// load generator keeps the server busy. It returns an estimate of the requests served
// within the profiled window.
func (b *bench) profileUnderLoad(t load.Target, pprofAddr string, kinds map[string]string) (int, error) {
	warm, err := load.Run(b.ctx, t, b.loadOptions(b.httpWarmup, 0))
	if err != nil {
		return 0, err
	}
	secs := int(b.profile.Seconds())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for kind, dst := range kinds {
		wg.Go(func() {
			if err := procs.Fetch(b.ctx, pprofAddr, fmt.Sprintf("/debug/pprof/%s?seconds=%d", kind, secs), dst); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	n := int(warm.Throughput*(float64(secs)+0.5)) + 1
	began := time.Now()
	_, err = load.Run(b.ctx, t, b.loadOptions(n, 0))
	elapsed := time.Since(began)
	wg.Wait()
	if err = errors.Join(append(errs, err)...); err != nil {
		return 0, err
	}
	window := float64(secs) - 0.1 // the load started 100ms into the profile
	return int(float64(n) * min(1, window/elapsed.Seconds())), nil
}

// memory reads agentd's RSS serving examples/stock-agent idle, then after
// b.memRequests after_planning calls of its quote plan, each with a fresh request id.
func (b *bench) memory() error {
	dir := filepath.Join(b.repo, "examples", "stock-agent")
	body, err := fixture.BodyFromFile(filepath.Join(dir, "requests", "quote-plan.json"), "mem")
	if err != nil {
		return err
	}
	addr, err := procs.FreeAddr()
	if err != nil {
		return err
	}
	srv, err := procs.Start(b.agentdSpec("mem-agentd", b.agentd, dir, addr), startTimeout)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			log.Print(err)
		}
	}()
	time.Sleep(2 * time.Second)
	idle, err := srv.Memory()
	if err != nil {
		return err
	}
	t := load.Target{
		URL:  "http://" + addr + "/v1/hooks/after_planning",
		Body: body.Append,
		Want: []byte(`"plan":{"plan_id":"mem-plan-`),
	}
	opts := b.loadOptions(b.memRequests, 0)
	opts.KeepGoing = true // the RSS reading is wanted even if some calls fail
	res, err := load.Run(b.ctx, t, opts)
	if err != nil {
		return err
	}
	log.Printf("memory load: %v", res)
	if res.Failures > 0 {
		b.notes = append(b.notes, fmt.Sprintf("Row 5b: %d of %d requests failed; the first: %v", res.Failures, b.memRequests, res.FirstFailure))
	}
	after, err := srv.Memory()
	if err != nil {
		return err
	}
	perRequest := float64(after.RSS-idle.RSS) / float64(b.memRequests)
	b.rows["5"] = append(b.rows["5"],
		report.Row{ID: "5a", Figure: "Memory: agentd RSS idle, examples/stock-agent", Agentd: report.Bytes(idle.RSS), Peer: "—", Ratio: "—", Goal: "none set"},
		report.Row{ID: "5b", Figure: fmt.Sprintf("Memory: agentd RSS after %s after_planning requests (new request_id and plan_id each, %d workers)",
			report.Count(int64(b.memRequests)), b.concurrency),
			Agentd: fmt.Sprintf("%s (peak %s; +%.0f B per request)", report.Bytes(after.RSS), report.Bytes(after.HWM), perRequest),
			Peer:   "—", Ratio: "—", Goal: "none set"},
	)
	b.notes = append(b.notes, fmt.Sprintf("Row 5b's load ran at %s req/s (p50 %s, p99 %s).",
		report.Count(int64(res.Throughput)), report.Duration(res.P50), report.Duration(res.P99)))
	return nil
}

func (b *bench) reload() error {
	dir, err := os.MkdirTemp(b.tmp, "reload-")
	if err != nil {
		return err
	}
	r, err := reloadlat.Measure(b.ctx, dir, b.policies, b.reloadEdits)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("Reload: write-to-live, %d hooks + %d Rego modules, %d edits, debounce %v", r.Hooks, r.Modules, r.Edits, r.Debounce)
	b.rows["4"] = append(b.rows["4"],
		report.Row{ID: "4a", Figure: what + " — p50", Agentd: report.Duration(r.P50), Peer: "—", Ratio: "—", Goal: "none set"},
		report.Row{ID: "4b", Figure: what + " — p95", Agentd: report.Duration(r.P95) + " (max " + report.Duration(r.Max) + ")", Peer: "—", Ratio: "—", Goal: "none set"},
	)
	return nil
}
