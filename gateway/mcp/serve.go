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
// A caller confined to a tenant (engine.WithTenant, as the daemon's authorization
// confines a tenant's token) opens sessions of that tenant: their requests name it in
// their metadata and run confined to it, and a session is answered 403
// tenant_forbidden to a caller confined to another tenant.
func (g *Gateway) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server },
		&mcp.StreamableHTTPOptions{SessionTimeout: g.cfg.SessionTimeout, Logger: g.log})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, confined := engine.TenantFrom(r.Context())
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			if confined && g.tenantOf(id) != tenant {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
					"type": "tenant_forbidden", "message": fmt.Sprintf("MCP session of request %q does not belong to the caller's tenant", requestID(id)),
				}})
				return
			}
			w.Header().Set(RequestIDHeader, requestID(id))
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&namingWriter{ResponseWriter: w, opened: func(id string) {
			if confined {
				g.tenants.Store(id, tenant)
			}
		}}, r)
	})
}

// tenantOf returns the tenant of the session with id, "" for none.
func (g *Gateway) tenantOf(sessionID string) string {
	t, _ := g.tenants.Load(sessionID)
	s, _ := t.(string)
	return s
}

// namingWriter adds RequestIDHeader to the response that opens a session, once the SDK
// has set its Mcp-Session-Id, and tells opened the new session's id.
type namingWriter struct {
	http.ResponseWriter
	opened func(sessionID string)
	wrote  bool
}

func (w *namingWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		if id := w.Header().Get("Mcp-Session-Id"); id != "" {
			w.opened(id)
			w.Header().Set(RequestIDHeader, requestID(id))
		}
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
