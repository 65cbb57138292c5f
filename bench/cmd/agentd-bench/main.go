// Command agentd-bench is the driver of `make bench`: in one run it measures agentd
// against raw OPA, `opa run --server`, raw cel-go and an HTTP floor, measures reload
// latency, memory and the Redis store's cost, writes CPU and allocation profiles,
// prints the markdown table and writes the report to <results>/latest.md with the
// ratio chart beside it. See bench/README.md for what each row means.
//
// `agentd-bench floor ADDR` serves the HTTP floor on ADDR and `agentd-bench mcp-proxy
// ADDR UPSTREAM` section 7's plain MCP proxy; the driver starts itself so to measure
// them, each as a process of its own.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/bench/internal/prof"
	"github.com/agentd-dev/agentd/bench/internal/report"
)

// config holds the flags. Every count and duration is bounded, so a run is too.
type config struct {
	repo, agentd, opa, goBin, results string
	upstream                          string

	rounds    int
	benchtime time.Duration

	concurrency, httpWarmup, httpRounds int
	httpCases                           []httpCase

	memRequests int
	reloadEdits int
	profile     time.Duration
	timeout     time.Duration

	gatewayRequests, gatewayRounds int

	mcpSessions, mcpCalls int

	openRates                []float64
	openRequests, openRounds int

	only []string // the steps to run; all when empty

	cheapRequests, dlogRequests int
	redis                       string

	// setFlags are the flags given other values than their defaults, as -name=value,
	// bar the paths of the binaries and the results.
	setFlags []string
}

func parseFlags() *config {
	testing.Init() // testing.Benchmark reads -test.benchtime
	c := &config{}
	flag.StringVar(&c.repo, "repo", ".", "repository root (policies/, examples/, cmd/agentd)")
	flag.StringVar(&c.agentd, "agentd", "bench/bin/agentd", "the agentd binary to serve with")
	flag.StringVar(&c.opa, "opa", "", "the OPA binary (make bench passes `go tool -n opa`, the pinned tool)")
	flag.StringVar(&c.goBin, "go", "go", "the go command, for building the profiling agentd and go tool pprof")
	flag.StringVar(&c.upstream, "upstream", "bench/bin/openai-upstream", "the scripted OpenAI-compatible upstream (examples/openai-gateway/upstream)")
	flag.StringVar(&c.results, "results", "bench/results", "where latest.md and the profiles go")
	flag.IntVar(&c.rounds, "rounds", 3, "interleaved rounds of each in-process pair (the median is reported)")
	flag.DurationVar(&c.benchtime, "benchtime", 400*time.Millisecond, "length of one in-process benchmark run")
	flag.IntVar(&c.concurrency, "concurrency", 16, "load generator workers (and keep-alive connections)")
	flag.IntVar(&c.httpWarmup, "http-warmup", 2000, "warm-up requests before each profiled HTTP load")
	flag.IntVar(&c.httpRounds, "http-rounds", 3, "interleaved HTTP runs per server and case (the median is reported)")
	flag.IntVar(&c.cheapRequests, "cheap-requests", 40000, "requests per run of each cheap-policy case, per server and the HTTP floor (a tenth more warm up)")
	flag.IntVar(&c.dlogRequests, "dlog-requests", 40000, "requests per run of each decision-log case, per daemon (a tenth more warm up)")
	flag.StringVar(&c.redis, "redis", os.Getenv("AGENTD_TEST_REDIS"), "a private Redis (redis://host:port/db) for section 11; its CPU and every command it receives are counted as agentd's")
	cases := flag.String("http-cases", "3:newtext:20000,3:unseen:20000,3:newops:20000,3:identical:20000,30:newtext:5000,30:unseen:5000,30:newops:5000",
		"HTTP cases, steps:identical|newtext|unseen|newops:requests each (against the 5,000-entry allow-list; a tenth more warm up each run)")
	flag.IntVar(&c.memRequests, "mem-requests", 100000, "requests before the second RSS reading")
	flag.IntVar(&c.reloadEdits, "reload-edits", 50, "edits timed by the reload measurement")
	flag.IntVar(&c.gatewayRequests, "gateway-requests", 4000, "sequential requests per run of each OpenAI gateway case (a tenth more warm up)")
	flag.IntVar(&c.gatewayRounds, "gateway-rounds", 3, "runs per side and OpenAI gateway case, alternating (the median is reported)")
	flag.IntVar(&c.mcpSessions, "mcp-sessions", 300, "paired MCP sessions measured (a tenth more warm up)")
	flag.IntVar(&c.mcpCalls, "mcp-calls", 10, "tools/call per MCP session")
	rates := flag.String("open-rates", "500,1000", "section 14's fixed request rates, per second, comma-separated")
	flag.IntVar(&c.openRequests, "open-requests", 2000, "requests per slice of section 14 (a side's turn at one rate; a tenth more warm up)")
	flag.IntVar(&c.openRounds, "open-rounds", 3, "slices per side and rate in section 14, the sides taking turns")
	flag.DurationVar(&c.profile, "profile", 4*time.Second, "length of each CPU profile")
	flag.DurationVar(&c.timeout, "timeout", 20*time.Minute, "bound on the whole run")
	only := flag.String("only", "", "comma-separated steps to run (for example \"decision log\"); all when empty")
	flag.Parse()
	if *only != "" {
		c.only = strings.Split(*only, ",")
	}
	if c.opa == "" {
		log.Fatal("agentd-bench: -opa is required (make bench passes the pinned `go tool -n opa`)")
	}
	var err error
	if c.httpCases, err = parseHTTPCases(*cases); err != nil {
		log.Fatal(err)
	}
	if c.openRates, err = parseRates(*rates); err != nil {
		log.Fatal(err)
	}
	paths := map[string]bool{"repo": true, "agentd": true, "opa": true, "go": true, "upstream": true, "results": true, "redis": true}
	flag.Visit(func(f *flag.Flag) {
		if !paths[f.Name] && f.Value.String() != f.DefValue {
			c.setFlags = append(c.setFlags, "-"+f.Name+"="+f.Value.String())
		}
	})
	if err := flag.Set("test.benchtime", c.benchtime.String()); err != nil {
		log.Fatal(err)
	}
	return c
}

// chartFile is the ratio chart, written beside latest.md.
const chartFile = "ratios.svg"

func main() {
	log.SetFlags(log.Ltime)
	log.SetPrefix("agentd-bench: ")
	if len(os.Args) == 3 && os.Args[1] == "floor" {
		log.Fatal(serveFloor(os.Args[2]))
	}
	if len(os.Args) == 4 && os.Args[1] == "mcp-proxy" {
		log.Fatal(serveMCPProxy(os.Args[2], os.Args[3]))
	}
	if len(os.Args) == 4 && os.Args[1] == "openai-proxy" {
		log.Fatal(serveOpenAIProxy(os.Args[2], os.Args[3]))
	}
	c := parseFlags()
	if err := run(c); err != nil {
		log.Fatal(err)
	}
}

// bench is one run: its settings, scratch directory and what it has gathered.
type bench struct {
	*config
	ctx      context.Context
	tmp      string
	policies []fixture.File
	rows     map[string][]report.Row // by section: "1" … "13"
	extra    []report.Row
	bars     map[string][]report.Bar       // the ratios the chart shows, by section
	stockCPU map[fixture.Variation]float64 // agentd's CPU per request, section 2's 3-step cases
	scale    map[fixture.Variation]scaleInputs
	profiles []profile
	notes    []string
	goals    []string
	seq      int // the next request sequence number: ids stay unique across loads
}

// profile is one summarized profile for the report.
type profile struct {
	title, about, file, top string
	shares                  []prof.Share
	ops                     int  // operations profiled, 0 when unknown
	objects                 bool // an allocation profile (else CPU)
}

// step is one measurement of the run, by the name -only selects it with.
type step struct {
	name string
	fn   func() error
}

func run(c *config) error {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "agentd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(c.results, 0o755); err != nil {
		return err
	}
	policies, err := fixture.Policies(c.repo)
	if err != nil {
		return err
	}
	b := &bench{config: c, ctx: ctx, tmp: tmp, policies: policies, rows: map[string][]report.Row{}, bars: map[string][]report.Bar{},
		stockCPU: map[fixture.Variation]float64{}, scale: map[fixture.Variation]scaleInputs{}}
	machine := report.ReadMachine(c.repo)
	log.Print(machine.Line())
	loadBefore := report.LoadAverage()

	steps := []step{
		{"in-process plan review", b.planReview},
		{"before_planning", b.beforePlanning},
		{"plan binding", b.binding},
		{"cost rows", b.costs},
		{"in-process profiles", b.inProcessProfiles},
		{"reload", b.reload},
		{"HTTP", b.http},
		{"HTTP cheap policy and floor", b.cheapPolicy},
		{"Redis store", b.sharedStore},
		{"HTTP profiles", b.httpProfiles},
		{"memory", b.memory},
		{"OpenAI gateway", b.gateway},
		{"MCP gateway", b.mcpGateway},
		{"gateways at fixed rates", b.fixedRate},
		{"records list", b.records},
		{"decision log", b.decisionLog},
	}
	for _, name := range c.only {
		if !slices.ContainsFunc(steps, func(s step) bool { return s.name == name }) {
			return fmt.Errorf("-only: no step %q", name)
		}
	}
	for _, s := range steps {
		if len(c.only) > 0 && !slices.Contains(c.only, s.name) {
			continue
		}
		t := time.Now()
		log.Printf("== %s", s.name)
		if err := s.fn(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		log.Printf("== %s done in %v", s.name, time.Since(t).Round(time.Millisecond))
	}
	b.notes = append(b.notes, fmt.Sprintf("Load average (1, 5, 15 min) at the start of the run: %s; at the end: %s. "+
		"On this 2-core machine anything above about 2 means other work competed with the benchmark.", loadBefore, report.LoadAverage()))
	md := b.render(machine, time.Since(began))
	out := filepath.Join(c.results, "latest.md")
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.results, chartFile), report.Chart("agentd against its peers and the HTTP floor", b.chartBars()), 0o644); err != nil {
		return err
	}
	fmt.Println(report.Table(b.table()))
	for _, g := range b.goals {
		fmt.Println("- " + g)
	}
	fmt.Printf("\nwrote %s (driver wall time %v)\n", out, time.Since(began).Round(time.Second))
	return nil
}
