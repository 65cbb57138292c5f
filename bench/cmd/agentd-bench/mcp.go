package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/bench/internal/mcplat"
	"github.com/agentd-dev/agentd/bench/internal/procs"
	"github.com/agentd-dev/agentd/bench/internal/report"
)

// mcpGoal is the most the MCP gateway may add to a tools/call at p99 on a memo hit.
const mcpGoal = time.Millisecond

// mcpGateway measures section 7: tools/call through `agentd serve`'s /mcp against the same
// call to the upstream directly and through a plain proxy on the same SDK (see
// bench/internal/mcplat).
func (b *bench) mcpGateway() error {
	urls, srv, stop, err := b.mcpSides()
	if err != nil {
		return err
	}
	defer stop()
	o := mcplat.Options{Sessions: b.mcpSessions, Calls: b.mcpCalls, Warmup: max(1, b.mcpSessions/10)}
	res, err := mcplat.Measure(b.ctx, urls, o)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, srv.LogTail(20))
	}
	d, p, g := res[0], res[1], res[2]
	added50, added99 := g.P50-d.P50, g.P99-d.P99
	what := fmt.Sprintf("MCP tools/call, one at a time over streamable HTTP, sessions of %d calls (memo hits; %s calls per side)",
		b.mcpCalls, report.Count(int64(g.N)))
	b.rows["7"] = append(b.rows["7"],
		report.Row{ID: "7a", Figure: what + " — p50 latency, through agentd /mcp vs the upstream directly",
			Agentd: report.Duration(g.P50), Peer: report.Duration(d.P50) + " (direct)",
			Ratio: report.Ratio(float64(g.P50), float64(d.P50)), Goal: "added: " + report.Duration(added50)},
		report.Row{ID: "7b", Figure: what + " — p99 latency, through agentd /mcp vs the upstream directly",
			Agentd: report.Duration(g.P99), Peer: report.Duration(d.P99) + " (direct)",
			Ratio: report.Ratio(float64(g.P99), float64(d.P99)), Goal: fmt.Sprintf("added: %s (goal < %s)", report.Duration(added99), report.Duration(mcpGoal))},
		report.Row{ID: "7c", Figure: what + " — p50 latency, through agentd /mcp vs through a plain proxy on the same SDK (forwards, reviews nothing; a process of its own)",
			Agentd: report.Duration(g.P50), Peer: report.Duration(p.P50) + " (proxy)",
			Ratio: report.Ratio(float64(g.P50), float64(p.P50)), Goal: fmt.Sprintf("the hop alone adds %s; agentd %s more", report.Duration(p.P50-d.P50), report.Duration(g.P50-p.P50))},
		report.Row{ID: "7d", Figure: what + " — p99 latency, through agentd /mcp vs through the plain proxy",
			Agentd: report.Duration(g.P99), Peer: report.Duration(p.P99) + " (proxy)",
			Ratio: report.Ratio(float64(g.P99), float64(p.P99)), Goal: fmt.Sprintf("the hop alone adds %s; agentd %s more", report.Duration(p.P99-d.P99), report.Duration(g.P99-p.P99))},
	)
	b.goals = append(b.goals, fmt.Sprintf("The MCP gateway adds < %s to a tools/call at p99 on a memo hit (row 7b): %s (added %s; one hop through a plain proxy on the same SDK adds %s, row 7d).",
		report.Duration(mcpGoal), metOrNot(added99 < mcpGoal), report.Duration(added99), report.Duration(p.P99-d.P99)))
	return nil
}

// mcpSides starts section 7's servers: the in-process upstream, agentd's gateway in
// front of it and the plain proxy on the same SDK (mcp-proxy mode). urls are the MCP
// endpoints in the order direct, proxy, gateway; srv is the gateway's agentd; stop
// stops them all.
func (b *bench) mcpSides() (urls []string, srv *procs.Server, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range slices.Backward(stops) {
			f()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	upstream, stopUpstream, err := mcplat.Upstream()
	if err != nil {
		return nil, nil, nil, err
	}
	stops = append(stops, stopUpstream)
	dir, err := os.MkdirTemp(b.tmp, "mcp-")
	if err != nil {
		return nil, nil, nil, err
	}
	if err := mcplat.GatewayConfig(dir, b.policies, upstream); err != nil {
		return nil, nil, nil, err
	}
	addr, err := procs.FreeAddr()
	if err != nil {
		return nil, nil, nil, err
	}
	srv, err = procs.Start(b.agentdSpec(filepath.Base(dir)+"-agentd", b.agentd, dir, addr), startTimeout)
	if err != nil {
		return nil, nil, nil, err
	}
	stops = append(stops, func() { stopServer(srv) })
	proxy, err := b.startSelf("mcp-proxy", upstream)
	if err != nil {
		return nil, nil, nil, err
	}
	stops = append(stops, func() { stopServer(proxy) })
	if err := waitUpstreamReady("http://"+addr, startTimeout); err != nil {
		return nil, nil, nil, fmt.Errorf("%w\n%s", err, srv.LogTail(20))
	}
	return []string{upstream, "http://" + proxy.Addr + "/mcp", "http://" + addr + "/mcp"}, srv, stop, nil
}

// serveMCPProxy is the driver's `mcp-proxy ADDR UPSTREAM` mode: section 7's plain proxy
// as a process of its own, as the gateway is.
func serveMCPProxy(addr, upstream string) error {
	h, closeUpstream, err := mcplat.Proxy(context.Background(), upstream)
	if err != nil {
		return err
	}
	defer closeUpstream()
	return http.ListenAndServe(addr, h)
}

// waitUpstreamReady waits until the daemon's MCP upstream is connected.
func waitUpstreamReady(base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var st struct {
			Gateways struct {
				MCP struct{ Servers []struct{ State string } }
			}
		}
		if resp, err := http.Get(base + "/v1/status"); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && len(st.Gateways.MCP.Servers) == 1 && st.Gateways.MCP.Servers[0].State == "ready" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the MCP upstream of %s is not ready after %v", base, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
