package openai

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// toolRound is an upstream reply with one get_quote call, always the same.
const toolRound = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,
"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_quote","arguments":"{\"symbol\":\"ACME\"}"}}]},
"finish_reason":"tool_calls","logprobs":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

// BenchmarkGateway_ToolRound is one user turn through the gateway on the example
// config, whose upstream answers with a tool call: before_planning, the upstream over
// loopback HTTP, after_planning (the decision memo answers from the second call on),
// one tool_call check, the response. Each call is a new conversation.
func BenchmarkGateway_ToolRound(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(toolRound))
	}))
	defer up.Close()
	g := benchGateway(b, up.URL)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		body := `{"model":"m","metadata":{"tenant":"acme"},"messages":[{"role":"user","content":"What is ACME trading at? ` + strconv.Itoa(i) + `"}]}`
		rec := httptest.NewRecorder()
		g.chat(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"tool_calls"`) {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// benchGateway serves the openai-gateway example's config in front of upstream.
func benchGateway(b *testing.B, upstream string) *Gateway {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "config")
	if out, err := exec.Command("cp", "-rL", "../../../../../examples/openai-gateway", dir).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	gw := filepath.Join(dir, "hooks", "40-gateway.yaml")
	data, err := os.ReadFile(gw)
	if err != nil {
		b.Fatal(err)
	}
	data = []byte(strings.Replace(strings.Replace(string(data), "http://127.0.0.1:9300/v1", upstream+"/v1", 1), "api_key_env: UPSTREAM_API_KEY", "", 1))
	if err := os.WriteFile(gw, data, 0o644); err != nil {
		b.Fatal(err)
	}
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		b.Fatal(err)
	}
	registry := reload.NewRegistry(1)
	registry.Swap(gen)
	mem := store.NewMemory(store.MemoryOptions{})
	driver, err := engine.NewDriver(engine.DriverConfig{Generations: registry, States: mem, Records: mem})
	if err != nil {
		b.Fatal(err)
	}
	return New(Config{Registry: registry, Driver: driver})
}
