package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/engine"
)

// TestGateway_SessionsBelongToTheTenantThatOpenedThem: behind an authorization that
// confines a caller to the tenant its X-Tenant header names (as the daemon does for a
// tenant's token), a session's request names and is confined to the tenant that opened
// it, and no caller of another tenant may use the session.
func TestGateway_SessionsBelongToTheTenantThatOpenedThem(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	handler := h.gw.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tenant := r.Header.Get("X-Tenant"); tenant != "" {
			r = r.WithContext(engine.WithTenant(r.Context(), tenant))
		}
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	as := func(tenant string) *http.Client {
		return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("X-Tenant", tenant)
			return http.DefaultTransport.RoundTrip(r)
		})}
	}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "acme-agent", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: as("acme"), DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "tenant"}})
	if err != nil || res.IsError {
		t.Fatalf("echo: %v %q", err, text(res))
	}
	id, _ := res.Meta[metaRequestID].(string)
	rec := h.waitRecord(id, func(n int) bool { return n == 1 })
	if rec.Tenant != "acme" {
		t.Errorf("the session's record is of tenant %q, want acme", rec.Tenant)
	}

	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", strings.TrimPrefix(id, "mcp-"))
	resp, err := as("globex").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Error struct{ Type string } }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusNotFound || body.Error.Type != "not_found" {
		t.Errorf("another tenant's call on the session = %d %+v, want 404 not_found", resp.StatusCode, body)
	}
}
