package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// TestOpenAIGateway_OnRejectError: with on_reject: error a rejected round is an
// OpenAI-shaped 403 naming the hook and the violations, streamed or not; the request
// id comes from the configured body field.
func TestOpenAIGateway_OnRejectError(t *testing.T) {
	g := startGateway(t, script(
		`{"user": "buy 100 ACME", "round": 1,
		  "tool_calls": [{"id": "call_t", "name": "place_trade", "arguments": "{\"symbol\":\"ACME\",\"amount\":18250}"}]}`,
	), "on_reject: error\nrequest_id_field: metadata.request_id", nil)
	for _, stream := range []bool{false, true} {
		params := ask("buy 100 ACME")
		id := "trade-" + map[bool]string{false: "plain", true: "streamed"}[stream]
		params.Metadata = shared.Metadata{"request_id": id}
		var err error
		if stream {
			s := g.stream(t, params)
			if len(s.chunks) != 0 {
				t.Errorf("streamed: %d chunks before the error", len(s.chunks))
			}
			err = s.err
		} else {
			_, err = g.client.Chat.Completions.New(context.Background(), params)
		}
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden || apiErr.Code != "required_after_planning" ||
			apiErr.Type != "policy_violation" {
			t.Fatalf("stream=%v: error = %v", stream, err)
		}
		var body struct {
			Hook       string `json:"hook"`
			Violations []struct {
				Code   string `json:"code"`
				StepID string `json:"step_id"`
			} `json:"violations"`
		}
		if err := json.Unmarshal([]byte(apiErr.RawJSON()), &body); err != nil || body.Hook != "allowed-operations" ||
			len(body.Violations) != 1 || body.Violations[0].Code != "capability_not_allowed" || body.Violations[0].StepID != "step-1-1" {
			t.Errorf("stream=%v: error body %s", stream, apiErr.RawJSON())
		}
		if rec := g.record(t, id); rec.Status != "failed" {
			t.Errorf("record %s: %s", id, rec.Status)
		}
	}
}

// TestOpenAIGateway_HotReload: the gateway reads gateways.openai of the live generation,
// so a saved mapping change applies to the next request, and a request keeps the
// mapping of the generation it opened on.
func TestOpenAIGateway_HotReload(t *testing.T) {
	g := startGateway(t, script(
		`{"user": "quote", "round": 1, "tool_calls": [{"id": "call_q", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"}]}`,
		`{"user": "quote", "round": 2, "content": "done"}`,
	), "", nil, "--debounce", "20ms")
	first := ask("quote")
	c, _ := g.complete(t, first)
	if got := toolNames(c); len(got) != 1 {
		t.Fatalf("before the edit: %v", got)
	}
	runTools(&first, c, quotes)

	gen := g.generation(t)
	writeFile(t, g.dir, "hooks/40-gateway.yaml", `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: gateway-openai}
settings: {rego_timeout: 10s}
gateways:
  openai:
    upstream: `+g.upstream+`
    api_key_env: UPSTREAM_API_KEY
    tools:
      quote_v2: {namespace: demo-tools, agent: stock-service, capability: stock_quote}
`)
	deadline := time.Now().Add(10 * time.Second)
	for g.generation(t) == gen {
		if time.Now().After(deadline) {
			t.Fatalf("no reload after the edit\n%s", g.d.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c, _ = g.complete(t, ask("quote"))
	if msg := c.Choices[0].Message; len(msg.ToolCalls) != 0 || !strings.Contains(msg.Content, "none of the requested actions is allowed") {
		t.Errorf("after the edit get_quote is mapped still: %+v", c.Choices[0])
	}
	if c, _ = g.complete(t, first); c.Choices[0].Message.Content != "done" {
		t.Errorf("the request opened before the edit: %+v", c.Choices[0])
	}
}

// generation returns the live generation id.
func (g *gateway) generation(t *testing.T) string {
	t.Helper()
	_, body := g.d.do(t, http.MethodGet, "/v1/status", "")
	var st struct {
		Generation string `json:"generation"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	return st.Generation
}

func TestCLI_CheckShowsTheOpenAIGateway(t *testing.T) {
	code, out, errOut := runCLI(t, "check", filepath.Join(repoRoot(t), "examples", "openai-gateway"))
	if code != exitOK {
		t.Fatalf("check exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"gateway openai: upstream http://127.0.0.1:9300/v1 (key from $UPSTREAM_API_KEY), on_reject refuse, timeout 30s, request id header X-Request-Id",
		"  get_quote -> demo-tools/stock-service/stock_quote", "  place_trade -> demo-tools/stock-service/execute_trade",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}
