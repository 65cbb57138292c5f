package mcp

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestGateway_ResourcesPassThroughOnlyWhenAllowed(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	c := h.connect()
	ctx := context.Background()
	var uris []string
	for r, err := range c.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	var templates []string
	for r, err := range c.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, r.URITemplate)
	}
	if !slices.Equal(uris, []string{"test://doc/public"}) || !slices.Equal(templates, []string{"test://dyn/{id}"}) {
		t.Fatalf("resources %v, templates %v; want only the allowed ones", uris, templates)
	}
	for uri, want := range map[string]string{"test://doc/public": "contents of test://doc/public", "test://dyn/42": "contents of test://dyn/42"} {
		res, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != want {
			t.Errorf("read %s = %+v, %v", uri, res, err)
		}
	}
	if _, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://doc/private"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("reading a resource the setting does not list: %v, want not found", err)
	}
	// test://dyn/* matches these as text, but each names another resource once
	// resolved: refused as not found.
	for _, uri := range []string{"test://dyn/../doc/private", "test://dyn/%2e%2e/doc/private", "test://dyn/%2E%2E%2Fdoc/private", "test://dyn/..", "test://dyn/a%2fb", "test://dyn/..\\doc"} {
		if _, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("reading %s: %v, want not found", uri, err)
		}
	}
}

func TestAmbiguousURI(t *testing.T) {
	for uri, want := range map[string]bool{
		"test://dyn/42": false, "file:///srv/docs/a.txt": false, "test://dyn/a..b": false, "test://dyn/.hidden": false,
		"test://dyn/42?x=../y": false, "test://dyn/{id}": false,
		"test://dyn/../x": true, "test://dyn/./x": true, "test://dyn/..": true, "file:///srv/../etc/passwd": true,
		"test://dyn/%2e%2e/x": true, "test://dyn/%2E./x": true, "test://dyn/a%2Fb": true, "test://dyn/a%5cb": true, "test://dyn/a\\b": true,
		"test://dyn/%252e%252e/x": true, "test://dyn/%%32%65%%32%65/x": true, "test://dyn/a%252fb": true, "test://dyn/..;/x": true,
		"test://dyn/.;v=1": true, "test://dyn/..%00": true, "test://dyn/a\x00b": true, "test://dyn/a;v=1": false, "test://dyn/100%25": false,
	} {
		if got := ambiguousURI(uri); got != want {
			t.Errorf("ambiguousURI(%q) = %v, want %v", uri, got, want)
		}
	}
}

func TestGateway_PromptsPassThroughOnlyWhenAllowed(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	c := h.connect()
	ctx := context.Background()
	var names []string
	for p, err := range c.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"greet"}) {
		t.Fatalf("prompts = %v, want [greet]", names)
	}
	res, err := c.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || res.Messages[0].Content.(*mcp.TextContent).Text != "Hello Ada" {
		t.Errorf("greet = %+v, %v", res, err)
	}
	if _, err := c.GetPrompt(ctx, &mcp.GetPromptParams{Name: "secret-prompt"}); err == nil {
		t.Error("a prompt the setting does not list was served")
	}
}

func TestGateway_CollidingToolsAreQualified(t *testing.T) {
	h := newHarness(t, stdioServer("local", "")+strings.ReplaceAll(stdioServer("other", ""), "prompts: [greet]", "prompts: ['*']"))
	h.waitReady("local", "other")
	c := h.connect()
	got := c.tools(t)
	for _, want := range []string{"local__echo", "other__echo", "local__add", "other__add"} {
		if !slices.Contains(got, want) {
			t.Errorf("tools %v lack %s", got, want)
		}
	}
	if slices.Contains(got, "echo") || slices.Contains(got, "other__slow") {
		t.Errorf("tools %v: a colliding name is listed bare, or other's slow passed a review that denies it", got)
	}
	if res := c.call(t, "other__echo", map[string]any{"message": "x"}); text(res) != "Echo: x (from other)" {
		t.Errorf("other__echo = %q", text(res))
	}
	if res := c.call(t, "local__echo", map[string]any{"message": "y"}); text(res) != "Echo: y (from local)" {
		t.Errorf("local__echo = %q", text(res))
	}
	rec := h.waitRecord(c.requestID(), func(n int) bool { return n == 2 })
	if s := rec.Phases[0].Plan.Steps[0]; s.AgentName != "other" || s.Capability() != "echo" || s.Instruction != "tools/call other__echo" {
		t.Errorf("the qualified call's step = %+v", s)
	}
	var prompts []string
	for p, err := range c.Prompts(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	slices.Sort(prompts)
	if want := []string{"local__greet", "other__greet", "secret-prompt"}; !slices.Equal(prompts, want) {
		t.Errorf("prompts = %v, want %v", prompts, want)
	}
}

func TestGateway_UpstreamListChangedReachesTheClient(t *testing.T) {
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	c := h.connect()
	if slices.Contains(c.tools(t), "extra") {
		t.Fatal("extra is listed before the upstream offers it")
	}
	if res := c.call(t, "grow", nil); res.IsError {
		t.Fatal(text(res))
	}
	select {
	case <-c.toolsChanged:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed notification")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(c.tools(t), "extra") {
		if time.Now().After(deadline) {
			t.Fatalf("extra is not listed after the upstream added it: %v", c.tools(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if res := c.call(t, "extra", nil); text(res) != "extra" {
		t.Errorf("extra = %q", text(res))
	}
}
