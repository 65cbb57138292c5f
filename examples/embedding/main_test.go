package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	openaigo "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentd-dev/agentd/api"
	"github.com/agentd-dev/agentd/api/client"
	"github.com/agentd-dev/agentd/decisionlog"
)

// upstream is a stand-in model: it answers every chat completion with a plain text.
func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop",`+
			`"message":{"role":"assistant","content":"ACME trades at 182.50 USD. Questions: ir@acme.example"}}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// host serves the example's handler over a copy of examples/openai-gateway whose
// gateway calls up; it returns the handler's base URL, its decision log and the file
// the log writes.
func host(t *testing.T, up string) (string, *decisionlog.Logger, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "config")
	if out, err := exec.Command("cp", "-rL", filepath.Join("..", "openai-gateway"), dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	gw := filepath.Join(dir, "hooks", "40-gateway.yaml")
	data, err := os.ReadFile(gw)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gw, []byte(strings.Replace(string(data), "http://127.0.0.1:9300/v1", up+"/v1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("UPSTREAM_API_KEY", "test-key")
	decisions := filepath.Join(t.TempDir(), "decisions.log")
	h, dlog, err := newHandler(dir, decisions, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, dlog, decisions
}

// TestEmbedding: the stage API, the OpenAI gateway and the host's own route answer on
// one mux; the gateway's request is a record the stage API's client reads back, and
// both transports' decisions are events in the host's decision log.
func TestEmbedding(t *testing.T) {
	base, dlog, decisions := host(t, upstream(t).URL)
	ctx := context.Background()

	resp, err := http.Get(base + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	hello, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(hello), "hello from the host") {
		t.Fatalf("GET /hello: %d %s", resp.StatusCode, hello)
	}

	// The stage API, through api/client.
	c, err := client.New(base, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := "What is ACME trading at?"
	bp, err := c.BeforePlanning(ctx, &api.BeforePlanningRequest{RequestID: "stage-1", Request: &text, Metadata: map[string]any{"tenant": "acme"}})
	if err != nil || bp.RequestID != "stage-1" || bp.Generation == "" {
		t.Fatalf("before_planning: %+v, %v", bp, err)
	}
	if _, err := c.AfterSynthesis(ctx, &api.AfterSynthesisRequest{RequestID: "no-such-request"}); !isType(err, api.TypeMissingField) {
		t.Fatalf("after_synthesis without a response: %v", err)
	}

	// The OpenAI gateway, through the official client.
	oc := openaigo.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0),
		option.WithHeader("X-Request-Id", "chat-1"))
	out, err := oc.Chat.Completions.New(ctx, openaigo.ChatCompletionNewParams{
		Model:    shared.ChatModel("m"),
		Messages: []openaigo.ChatCompletionMessageParamUnion{openaigo.UserMessage(text)},
		Metadata: shared.Metadata{"tenant": "acme"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Choices[0].Message.Content; got != "ACME trades at 182.50 USD. Questions: [REDACTED]" {
		t.Errorf("the gateway's answer is %q, want after_synthesis's redaction", got)
	}
	rec, err := c.Execution(ctx, "chat-1")
	if err != nil || rec.RequestID != "chat-1" || rec.FinalResponse != "ACME trades at 182.50 USD. Questions: [REDACTED]" {
		t.Fatalf("the gateway's record through the stage API: %+v, %v", rec, err)
	}
	st, err := c.Status(ctx)
	if err != nil || st.Generation != bp.Generation {
		t.Fatalf("status: %+v, %v", st, err)
	}

	// The decision log: the stage API's call under the decision id it answered, and
	// the gateway's request from before_planning to its final response.
	if err := dlog.Close(ctx); err != nil {
		t.Fatal(err)
	}
	events := readEvents(t, decisions)
	if e := events[bp.DecisionID]; e == nil || e.Kind != "stage" || e.RequestID != "stage-1" || e.Stage != "before_planning" || e.Generation != bp.Generation {
		t.Errorf("the event of the stage API's before_planning (decision %s): %+v", bp.DecisionID, e)
	}
	var stages []string
	for _, e := range events {
		if e.RequestID == "chat-1" && e.Kind == "stage" {
			stages = append(stages, string(e.Stage))
		}
	}
	if !slices.Contains(stages, "before_planning") || !slices.Contains(stages, "after_synthesis") {
		t.Errorf("the gateway's request has stage events %v, want before_planning and after_synthesis among them", stages)
	}
}

// readEvents reads a decision log file by decision id, checking each line is an event
// of the schema this agentd writes.
func readEvents(t *testing.T, path string) map[string]*decisionlog.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]*decisionlog.Event{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e decisionlog.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.SchemaVersion != decisionlog.SchemaVersion || e.DecisionID == "" {
			t.Fatalf("decision log line %s: %v", line, err)
		}
		events[e.DecisionID] = &e
	}
	return events
}

func isType(err error, typ api.ErrorType) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Type == typ
}
