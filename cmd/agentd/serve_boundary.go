package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	mcpgw "github.com/agentd-dev/agentd/gateway/mcp"
	"github.com/agentd-dev/agentd/server"
)

// boundaryFlags configure what the daemon accepts from browsers and how many MCP
// sessions it keeps.
type boundaryFlags struct {
	allowedHosts                         string
	mcpMaxSessions, mcpMaxSessionsPerTok int
	mcpSessionIdle                       time.Duration
}

func (f *boundaryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.allowedHosts, "allowed-hosts", "", "comma-separated host names, besides localhost and loopback addresses, that a call reaching agentd at a loopback address may name in its Host header (others are refused 403 host_forbidden: DNS rebinding)")
	fs.IntVar(&f.mcpMaxSessions, "mcp-max-sessions", mcpgw.DefaultMaxSessions, "MCP sessions open at once at most; one more is refused 429 too_many_sessions")
	fs.IntVar(&f.mcpMaxSessionsPerTok, "mcp-max-sessions-per-token", mcpgw.DefaultMaxSessionsPerCaller, "MCP sessions one token (or, with no --token-file, every caller together) has open at once at most")
	fs.DurationVar(&f.mcpSessionIdle, "mcp-session-idle", mcpgw.DefaultSessionIdle, "how long an MCP session nobody calls stays open")
}

// check reports a flag value that cannot work.
func (f *boundaryFlags) check(stderr io.Writer) error {
	if f.mcpMaxSessions <= 0 || f.mcpMaxSessionsPerTok <= 0 || f.mcpSessionIdle <= 0 {
		fmt.Fprintln(stderr, "agentd serve: --mcp-max-sessions, --mcp-max-sessions-per-token and --mcp-session-idle must be positive")
		return errUsage
	}
	return nil
}

// hosts returns the --allowed-hosts names.
func (f *boundaryFlags) hosts() []string {
	var out []string
	for _, h := range strings.Split(f.allowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// mcpConfig is the configuration of the daemon's MCP gateway: behind its authorization
// (whose tokens are the callers sessions belong to) and its browser boundary (which
// checks Host headers, --allowed-hosts included), bounded by --max-body and the
// --mcp-* flags, logging upstream lines as --log-payloads says; a held call is elicited
// at the viewer's approvals page of the origin the session reached the daemon at.
func (f *serveFlags) mcpConfig(driver *engine.Driver, registry *reload.Registry, logger *slog.Logger) mcpgw.Config {
	return mcpgw.Config{Driver: driver, Generations: registry, Logger: logger,
		MaxSessions: f.boundary.mcpMaxSessions, MaxSessionsPerCaller: f.boundary.mcpMaxSessionsPerTok, SessionTimeout: f.boundary.mcpSessionIdle,
		MaxBody: f.maxBody, Caller: server.CallerOf, DisableLocalhostProtection: true, LogPayloads: f.logPayloads,
		ApprovalsPage: approvalsPage}
}

// approvalsPage is the viewer's approvals page (cmd/agentd/internal/viewer).
const approvalsPage = "/ui/#/approvals"
