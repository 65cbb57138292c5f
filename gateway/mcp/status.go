package mcp

import (
	"context"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// Status is the gateway's state, for GET /v1/status.
type Status struct {
	Servers []ServerStatus `json:"servers"`
	// Sessions are the HTTP sessions open and their bounds (Config).
	Sessions SessionsStatus `json:"sessions"`
}

// SessionsStatus counts the HTTP sessions open, of the caller's tenant only for a
// caller confined to one, and states the bounds they are held to.
type SessionsStatus struct {
	Open         int    `json:"open"`
	Max          int    `json:"max"`
	MaxPerCaller int    `json:"max_per_caller"`
	IdleTimeout  string `json:"idle_timeout"`
}

// ServerStatus is one upstream's state: starting, ready, restarting (down, with the
// error that took it down and a reconnect pending) or stopped.
type ServerStatus struct {
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	Transport string    `json:"transport"`
	State     string    `json:"state"`
	Since     time.Time `json:"since"`
	LastError string    `json:"last_error,omitempty"`
	Restarts  int       `json:"restarts"`
	// Tools are the names the gateway offers the upstream's tools under (before each
	// session's review narrows them).
	Tools []string `json:"tools"`
	// Uncataloged are the upstream's tools its catalog entry (tools:) does not list:
	// plan validation refuses them, so no session is offered them.
	Uncataloged []string `json:"uncataloged,omitempty"`
}

// Status returns the state of every upstream, in configuration order, and of the
// sessions: those of ctx's tenant when ctx is confined to one (engine.WithTenant).
func (g *Gateway) Status(ctx context.Context) Status {
	g.mu.Lock()
	ups := slices.Clone(g.upstreams)
	offered := g.offered.tools
	g.mu.Unlock()
	out := Status{Servers: []ServerStatus{}, Sessions: SessionsStatus{
		Max: g.cfg.MaxSessions, MaxPerCaller: g.cfg.MaxSessionsPerCaller, IdleTimeout: g.cfg.SessionTimeout.String(),
	}}
	tenant, confined := engine.TenantFrom(ctx)
	out.Sessions.Open = g.owners.count(tenant, confined)
	for _, u := range ups {
		s := u.settings()
		st := ServerStatus{Name: u.name, Namespace: s.Namespace, Transport: "stdio", Tools: []string{}}
		if s.URL != "" {
			st.Transport = "http"
		}
		u.mu.Lock()
		st.State, st.Since, st.LastError, st.Restarts = u.state, u.since.UTC(), u.lastErr, u.restarts
		u.mu.Unlock()
		for name, r := range offered {
			if r.up == u {
				st.Tools = append(st.Tools, name)
			}
		}
		slices.Sort(st.Tools)
		for _, t := range u.offers().tools {
			if !slices.ContainsFunc(s.Tools, func(c config.MCPTool) bool { return c.Name == t.Name }) {
				st.Uncataloged = append(st.Uncataloged, t.Name)
			}
		}
		out.Servers = append(out.Servers, st)
	}
	return out
}

// WaitStarted waits until every upstream has made its first connection attempt (it is
// ready, or down and retrying), or ctx is done, so that a client's first tools/list
// sees what the upstreams offer. Run must be running.
func (g *Gateway) WaitStarted(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		starting := g.cfg.Generations.Current() != nil && !g.applied.Load()
		for _, s := range g.Status(ctx).Servers {
			starting = starting || s.State == stateStarting
		}
		if !starting {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
