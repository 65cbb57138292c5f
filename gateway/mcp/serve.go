package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/engine"
)

// Handler serves MCP over the streamable HTTP transport (mount it at /mcp). Every
// response of a session carries its agentd request id in RequestIDHeader.
//
// A session belongs to who opened it: the caller (Config.Caller) and, for a caller
// confined to a tenant (engine.WithTenant, as the daemon's authorization confines a
// tenant's token), that tenant, which its requests name in their metadata and are
// confined to. A request naming a session that is not the caller's, or confined
// otherwise, is answered 404 not_found, as one naming no session at all: it learns
// nothing of other callers' sessions. A POST that would open a session past
// Config.MaxSessionsPerCaller of the caller's, or past Config.MaxSessions in all, is
// answered 429 too_many_sessions; a session nobody calls for Config.SessionTimeout is
// closed, and gives back its slot. Bodies over Config.MaxBody are answered 413.
//
// The transport's own check of the Host header on loopback is off when
// Config.DisableLocalhostProtection says the server in front checks it.
func (g *Gateway) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server },
		&mcp.StreamableHTTPOptions{SessionTimeout: g.cfg.SessionTimeout, Logger: g.log, MaxRequestBodyBytes: g.cfg.MaxBody,
			DisableLocalhostProtection: g.cfg.DisableLocalhostProtection})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := owner{caller: g.cfg.Caller(r.Context())}
		who.tenant, _ = engine.TenantFrom(r.Context())
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			if o, ok := g.owners.of(id); !ok || o != who {
				writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no MCP session %q is open for this caller", requestID(id)))
				return
			}
			w.Header().Set(RequestIDHeader, requestID(id))
			h.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost { // without a session id the transport refuses it
			h.ServeHTTP(w, r)
			return
		}
		if full, ok := g.owners.reserve(who.caller); !ok {
			limit := g.cfg.MaxSessions
			if full == "caller" {
				limit = g.cfg.MaxSessionsPerCaller
			}
			writeError(w, http.StatusTooManyRequests, "too_many_sessions",
				fmt.Sprintf("the %s has %d MCP sessions open, its limit: end one (DELETE /mcp) or let one idle out", full, limit))
			return
		}
		// The slot is kept or given back as the answer starts, before the client can
		// send its next request.
		answered := false
		h.ServeHTTP(&namingWriter{ResponseWriter: w, answered: func(id string) {
			answered = true
			if id == "" {
				g.owners.release(who.caller)
				return
			}
			g.track(id, who, originOf(r))
		}}, r)
		if !answered {
			g.owners.release(who.caller)
		}
	})
}

// writeError answers an HTTP request the gateway refuses before the transport sees it,
// with the API's error body.
func writeError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"type": typ, "message": message}})
}

// track records who opened session id, which holds the slot reserved for it until the
// session ends, and the origin it was opened at (see originOf).
func (g *Gateway) track(id string, who owner, origin string) {
	g.owners.opened(id, who, origin)
	for ss := range g.server.Sessions() {
		if ss.ID() == id {
			go func() {
				_ = ss.Wait()
				g.owners.closed(id)
			}()
			return
		}
	}
	g.owners.closed(id) // it ended already
}

// originOf is the origin r reached the gateway at: its scheme and its Host, which the
// daemon's browser boundary checked (loopback or --allowed-hosts).
func originOf(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// namingWriter adds RequestIDHeader to the response that opens a session, once the SDK
// has set its Mcp-Session-Id, and tells answered the new session's id ("" for none)
// as the response starts.
type namingWriter struct {
	http.ResponseWriter
	answered func(sessionID string)
	wrote    bool
}

func (w *namingWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		id := w.Header().Get("Mcp-Session-Id")
		if id != "" {
			w.Header().Set(RequestIDHeader, requestID(id))
		}
		w.answered(id)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *namingWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets the SDK stream server-sent events through the wrapper.
func (w *namingWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *namingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Shutdown ends every MCP session once no tools/call is in flight, or when ctx is
// done: a draining HTTP server then sees the sessions' event streams close.
func (g *Gateway) Shutdown(ctx context.Context) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for g.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			g.closeSessions()
			return
		case <-tick.C:
		}
	}
	g.closeSessions()
}

func (g *Gateway) closeSessions() {
	for ss := range g.server.Sessions() {
		_ = ss.Close()
	}
}

// Serve serves one MCP session over t (mcp.StdioTransport for `agentd mcp`) until the
// client ends it or ctx is done.
func (g *Gateway) Serve(ctx context.Context, t mcp.Transport) error {
	ss, err := g.server.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = ss.Close()
		select {
		case <-done:
		case <-time.After(time.Second):
		}
		return nil
	}
}
