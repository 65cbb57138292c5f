package mcp

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingServer returns the entry point of @modelcontextprotocol/server-everything
// as scripts/npm-deps.sh installs it. Without it the test is skipped, or fails under
// CI=true, where the project's scripts must have installed it.
func everythingServer(t *testing.T) string {
	t.Helper()
	path, err := filepath.Abs("../../tools/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("@modelcontextprotocol/server-everything is not installed (%v); CI runs scripts/npm-deps.sh first", err)
		}
		t.Skipf("@modelcontextprotocol/server-everything is not installed; run scripts/npm-deps.sh (%v)", err)
	}
	return path
}

// TestGateway_ServerEverything runs the gateway in front of the real reference server
// from npm, spawned over stdio.
func TestGateway_ServerEverything(t *testing.T) {
	entry := everythingServer(t)
	h := newHarness(t, `      - name: everything
        namespace: demo-mcp
        command: [node, `+jsonString(entry)+`, stdio]
        tools:
          - {name: echo}
          - {name: get-sum}
          - {name: get-env}
          - {name: get-structured-content}
          - {name: trigger-long-running-operation, timeout: 20s}
        resources: ["demo://resource/static/document/*"]
        prompts: [simple-prompt]
`)
	h.waitReady("everything")
	c := h.connect()
	ctx := context.Background()

	tools := c.tools(t)
	slices.Sort(tools)
	if want := []string{"echo", "get-structured-content", "get-sum", "trigger-long-running-operation"}; !slices.Equal(tools, want) {
		t.Errorf("tools/list = %v, want exactly the allowed %v", tools, want)
	}
	if res := c.call(t, "echo", map[string]any{"message": "hello"}); res.IsError || text(res) != "Echo: hello" {
		t.Errorf("echo = %q", text(res))
	}
	if res := c.call(t, "get-sum", map[string]any{"a": 2, "b": 40}); res.IsError || text(res) != "The sum of 2 and 40 is 42." {
		t.Errorf("get-sum = %q", text(res))
	}
	res, err := c.CallTool(ctx, callParams("trigger-long-running-operation", map[string]any{"duration": 1, "steps": 2}, "lro"))
	if err != nil || res.IsError {
		t.Fatalf("trigger-long-running-operation: %v %q", err, text(res))
	}
	select {
	case p := <-c.progress:
		if p.ProgressToken != "lro" {
			t.Errorf("progress token = %v", p.ProgressToken)
		}
	case <-time.After(5 * time.Second):
		t.Error("no progress notification from the long-running operation")
	}

	var uris []string
	for r, err := range c.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if len(uris) == 0 {
		t.Fatal("no resource passes through")
	}
	for _, uri := range uris {
		if matched, _ := filepath.Match("demo://resource/static/document/*", uri); !matched {
			t.Errorf("resource %s passes through, but the setting does not list it", uri)
		}
	}
	read, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: uris[0]})
	if err != nil || len(read.Contents) == 0 || read.Contents[0].Text == "" {
		t.Errorf("read %s: %+v, %v", uris[0], read, err)
	}
	if _, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/1"}); err == nil {
		t.Error("a resource the setting does not list was read")
	}
	prompt, err := c.GetPrompt(ctx, &mcp.GetPromptParams{Name: "simple-prompt"})
	if err != nil || len(prompt.Messages) == 0 {
		t.Errorf("simple-prompt: %+v, %v", prompt, err)
	}

	// The disallowed tool, under its own name, another letter case and a qualified
	// name, last: the review's rejection ends the session's request.
	for _, name := range []string{"GET-ENV", "everything__get-env", "get-env"} {
		if res := c.call(t, name, nil); !res.IsError || refusalCode(res) == "" {
			t.Errorf("%s = %q, want a refusal", name, text(res))
		}
	}
	rec := h.waitRecord(c.requestID(), func(n int) bool { return n == 3 })
	var caps []string
	for _, ph := range rec.Phases {
		caps = append(caps, ph.Plan.Steps[0].Capability())
	}
	if want := []string{"echo", "get-sum", "trigger-long-running-operation"}; !slices.Equal(caps, want) {
		t.Errorf("accepted phases = %v, want %v", caps, want)
	}
	if len(rec.Rejections) != 1 || rec.Rejections[0].Plan.Steps[0].Capability() != "get-env" {
		t.Errorf("rejections = %+v, want the review's rejection of get-env", rec.Rejections)
	}
}
