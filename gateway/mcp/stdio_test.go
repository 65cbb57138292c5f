package mcp

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGateway_ServeOneSessionOverAConnection: Serve (what `agentd mcp` runs over stdio)
// serves one session, whose request id is in each result's _meta.
func TestGateway_ServeOneSessionOverAConnection(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.gw.Serve(ctx, serverEnd) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "over a pipe"}})
	if err != nil || res.IsError || text(res) != "Echo: over a pipe (from local)" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	id, _ := res.Meta[metaRequestID].(string)
	h.waitRecord(id, func(n int) bool { return n == 1 })
	st, ok, err := h.mem.GetRequest(ctx, id)
	if err != nil || !ok {
		t.Fatalf("request state of %s: %v", id, err)
	}
	if c, _ := st.Metadata["client"].(map[string]any); c["name"] != "stdio-test" || st.Metadata["gateway"] != "mcp" {
		t.Errorf("request metadata = %v", st.Metadata)
	}
	_ = cs.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve after the client closed: %v", err)
	}
	cancel()
}
