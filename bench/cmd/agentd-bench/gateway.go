package main

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/bench/internal/load"
	"github.com/agentd-dev/agentd/bench/internal/procs"
	"github.com/agentd-dev/agentd/bench/internal/report"
)

// gatewayGoal is the goal for the OpenAI gateway: what it adds to the p99
// latency of a tool round whose plan review the decision memo answers.
const gatewayGoal = time.Millisecond

// gatewayCase is one kind of call through the gateway.
type gatewayCase struct {
	id, question, what, want string
}

var gatewayCases = []gatewayCase{
	{id: "a", question: fixture.GatewayToolRound, want: `"tool_calls"`,
		what: "a round of one tool call (before_planning, after_planning answered by the decision memo, one tool_call check)"},
	{id: "b", question: fixture.GatewayAnswer, want: `[REDACTED]`,
		what: "an answer (before_planning, after_synthesis redaction)"},
}

// gateway measures section 6: the latency the OpenAI gateway adds over calling the
// scripted upstream (examples/openai-gateway/upstream) directly with the same body, and
// what one hop through a plain reverse proxy (openai-proxy mode, a process of its own as
// agentd is) adds by itself. Each request is a new conversation. One worker sends each
// body to the three, one after the other (load.Interleaved), so that the figures are
// each call's own latency, not queueing, and all see the same moments of the shared
// machine; the median of each figure over the runs is reported.
func (b *bench) gateway() error {
	sides, stop, err := b.openAISides()
	if err != nil {
		return err
	}
	defer stop()
	srv := sides.srv
	for _, c := range gatewayCases {
		body, err := fixture.GatewayBody(c.question)
		if err != nil {
			return err
		}
		targets := sides.targets(c, body)
		var rd, rp, rg []load.Result
		var cpu []float64 // agentd's CPU time per request through it, ns
		for r := range b.gatewayRounds {
			opts := b.loadOptions(b.gatewayRequests, b.gatewayRequests/10)
			var before time.Duration
			var cpuErr error
			opts.BeforeMeasure = func() { before, cpuErr = srv.CPUTime() }
			rs, err := load.Interleaved(b.ctx, targets, opts)
			if err != nil {
				return fmt.Errorf("gateway %s: %w", c.id, err)
			}
			d, p, g := rs[0], rs[1], rs[2]
			after, err := srv.CPUTime()
			if err = errors.Join(cpuErr, err); err != nil {
				return err
			}
			cpu = append(cpu, float64((after-before).Nanoseconds())/float64(g.Requests))
			log.Printf("gateway %s, round %d: direct %v; through a plain proxy %v; through the gateway %v; agentd CPU %s/req",
				c.id, r+1, d, p, g, report.NS(cpu[len(cpu)-1]))
			rd, rp, rg = append(rd, d), append(rp, p), append(rg, g)
		}
		d, p, g := medianResult(rd), medianResult(rp), medianResult(rg)
		what := fmt.Sprintf("OpenAI gateway: %s, 1 worker, %s req — ", c.what, report.Count(int64(b.gatewayRequests)))
		figure := func(gw, up time.Duration) string {
			return fmt.Sprintf("%s (%s added)", report.Duration(gw), report.Duration(gw-up))
		}
		hop := func(proxied, direct, through time.Duration) string {
			return fmt.Sprintf("the hop alone adds %s; agentd %s more", report.Duration(proxied-direct), report.Duration(through-proxied))
		}
		p99Goal := "none set"
		if c.id == "a" {
			met := g.P99-d.P99 < gatewayGoal
			p99Goal = goal(met, "added < 1 ms")
			b.goals = append(b.goals, fmt.Sprintf("The OpenAI gateway adds under 1 ms at p99 to a tool round on a memo hit: %s (%s added; one hop through a plain reverse proxy adds %s, row 6a5).",
				metOrNot(met), report.Duration(g.P99-d.P99), report.Duration(p.P99-d.P99)))
		}
		b.rows["6"] = append(b.rows["6"],
			report.Row{ID: "6" + c.id + "1", Figure: what + "p50 latency", Agentd: figure(g.P50, d.P50),
				Peer: report.Duration(d.P50) + " (scripted upstream, direct)", Ratio: report.Ratio(float64(g.P50), float64(d.P50)), Goal: "lower is better"},
			report.Row{ID: "6" + c.id + "2", Figure: what + "p99 latency", Agentd: figure(g.P99, d.P99),
				Peer: report.Duration(d.P99) + " (scripted upstream, direct)", Ratio: report.Ratio(float64(g.P99), float64(d.P99)), Goal: p99Goal},
			report.Row{ID: "6" + c.id + "3", Figure: what + "agentd CPU per request (/proc/PID/stat)", Agentd: report.NS(medianOf(cpu)),
				Peer: "—", Ratio: "—", Goal: "lower is better"},
			report.Row{ID: "6" + c.id + "4", Figure: what + "p50 latency, through agentd vs through a plain reverse proxy (net/http/httputil, forwards, reviews nothing; a process of its own)",
				Agentd: report.Duration(g.P50), Peer: report.Duration(p.P50) + " (proxy)", Ratio: report.Ratio(float64(g.P50), float64(p.P50)), Goal: hop(p.P50, d.P50, g.P50)},
			report.Row{ID: "6" + c.id + "5", Figure: what + "p99 latency, through agentd vs through the plain reverse proxy",
				Agentd: report.Duration(g.P99), Peer: report.Duration(p.P99) + " (proxy)", Ratio: report.Ratio(float64(g.P99), float64(p.P99)), Goal: hop(p.P99, d.P99, g.P99)},
		)
	}
	return nil
}

// openAISides are section 6's three servers: the scripted upstream, the plain reverse
// proxy in front of it and agentd's gateway in front of it, by address.
type openAISides struct {
	upstream, proxy, gateway string
	srv                      *procs.Server // the gateway's agentd
}

// targets are the three sides of one gateway case, in the order direct, proxy, gateway.
func (s openAISides) targets(c gatewayCase, body fixture.Template) []load.Target {
	return []load.Target{
		{URL: "http://" + s.upstream + "/v1/chat/completions", Body: body.Append, Want: []byte(`"choices"`)},
		{URL: "http://" + s.proxy + "/v1/chat/completions", Body: body.Append, Want: []byte(`"choices"`)},
		{URL: "http://" + s.gateway + "/v1/chat/completions", Body: body.Append, Want: []byte(c.want)},
	}
}

// openAISides starts the scripted upstream (examples/openai-gateway/upstream), the
// plain reverse proxy (openai-proxy mode) and agentd on the gateway config; stop stops
// them.
func (b *bench) openAISides() (s openAISides, stop func(), err error) {
	var started []*procs.Server
	stop = func() {
		for _, p := range slices.Backward(started) {
			stopServer(p)
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	upAddr, err := procs.FreeAddr()
	if err != nil {
		return s, nil, err
	}
	scriptFile := filepath.Join(b.tmp, "gateway-script.json")
	if err := os.WriteFile(scriptFile, []byte(fixture.GatewayScript), 0o644); err != nil {
		return s, nil, err
	}
	up, err := procs.Start(procs.Spec{
		Name: "scripted-upstream", Addr: upAddr, Bin: b.upstream, Ready: "/v1/models",
		Args: []string{"-addr", upAddr, "-script", scriptFile}, Log: filepath.Join(b.tmp, "scripted-upstream.log"),
	}, startTimeout)
	if err != nil {
		return s, nil, err
	}
	started = append(started, up)
	proxy, err := b.startSelf("openai-proxy", "http://"+upAddr)
	if err != nil {
		return s, nil, err
	}
	started = append(started, proxy)
	dir, err := os.MkdirTemp(b.tmp, "gateway-agentd-")
	if err != nil {
		return s, nil, err
	}
	if err := fixture.GatewayConfig(dir, b.policies, "http://"+upAddr+"/v1"); err != nil {
		return s, nil, err
	}
	addr, err := procs.FreeAddr()
	if err != nil {
		return s, nil, err
	}
	srv, err := procs.Start(b.agentdSpec(filepath.Base(dir), b.agentd, dir, addr), startTimeout)
	if err != nil {
		return s, nil, err
	}
	started = append(started, srv)
	return openAISides{upstream: upAddr, proxy: proxy.Addr, gateway: addr, srv: srv}, stop, nil
}

// serveOpenAIProxy is the driver's `openai-proxy ADDR UPSTREAM` mode: section 6's plain
// reverse proxy, forwarding every request to UPSTREAM (a base URL) as it is, as a
// process of its own.
func serveOpenAIProxy(addr, upstream string) error {
	target, err := url.Parse(upstream)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.Handle("/", httputil.NewSingleHostReverseProxy(target))
	return http.ListenAndServe(addr, mux)
}

func stopServer(s *procs.Server) {
	if err := s.Stop(); err != nil {
		log.Print(err)
	}
}
