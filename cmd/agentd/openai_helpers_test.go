package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentd-dev/agentd/internal/capture"
)

// The scripted upstream of examples/openai-gateway, built once. It replays the replies
// of a script; no model runs in these tests.
var (
	upstreamOnce sync.Once
	upstreamBin  string
	upstreamErr  error
)

func upstreamBinary(t *testing.T) string {
	t.Helper()
	upstreamOnce.Do(func() {
		upstreamBin = filepath.Join(filepath.Dir(binary), "openai-upstream")
		out, err := exec.Command("go", "build", "-o", upstreamBin, "../../examples/openai-gateway/upstream").CombinedOutput()
		if err != nil {
			upstreamErr = err
			upstreamBin = string(out)
		}
	})
	if upstreamErr != nil {
		t.Fatalf("build the scripted upstream: %v\n%s", upstreamErr, upstreamBin)
	}
	return upstreamBin
}

// startUpstream runs the scripted upstream on a free port with script (a JSON script
// document) and returns its base URL (…/v1). keyEnv, when set, is the KEY=value the
// upstream requires as bearer token.
func startUpstream(t *testing.T, script string, keyEnv string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-addr", "127.0.0.1:0", "-script", path}
	cmd := exec.Command(upstreamBinary(t), args...)
	if keyEnv != "" {
		name, _, _ := strings.Cut(keyEnv, "=")
		cmd.Args = append(cmd.Args, "-key-env", name)
		cmd.Env = append(os.Environ(), keyEnv)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &capture.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("scripted upstream did not start: %v\n%s", err, stderr)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "upstream listening on ")
	if !ok {
		t.Fatalf("scripted upstream said %q", line)
	}
	return url
}

// gatewayConfig copies examples/openai-gateway with its gateway pointed at upstream
// and gateway settings replaced by settings (YAML lines under gateways.openai, besides
// upstream and the example's tools), plus extra files (name -> content; "" removes
// the file).
func gatewayConfig(t *testing.T, upstream, settings string, extra map[string]string) string {
	t.Helper()
	dir := copyExample(t, "openai-gateway")
	// A generous rego_timeout keeps a loaded machine from turning reviews into
	// fail-closed timeouts.
	writeFile(t, dir, "hooks/40-gateway.yaml", `apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: gateway-openai}
settings: {rego_timeout: 10s}
gateways:
  openai:
    upstream: `+upstream+`
    api_key_env: UPSTREAM_API_KEY
`+indent(settings, "    ")+`    tools:
      get_quote: {namespace: demo-tools, agent: stock-service, capability: stock_quote}
      place_trade: {namespace: demo-tools, agent: stock-service, capability: execute_trade}
`)
	for name, content := range extra {
		if content == "" {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
				t.Fatal(err)
			}
			continue
		}
		writeFile(t, dir, name, content)
	}
	return dir
}

func indent(lines, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		if strings.TrimSpace(l) != "" {
			b.WriteString(prefix + strings.TrimSpace(l) + "\n")
		}
	}
	return b.String()
}

// upstreamKey is the upstream's key in these tests: the daemon has it in its
// environment, the scripted upstream requires it, the client never sees it.
const upstreamKey = "UPSTREAM_API_KEY=sk-upstream-7f3a9c"

// gateway is a daemon serving the gateway in front of a scripted upstream, and an
// official OpenAI client pointed at it.
type gateway struct {
	d        *daemon
	dir      string // the config directory
	upstream string
	client   openai.Client
}

// startGateway starts a scripted upstream with script and a daemon serving the example
// config pointed at it (see gatewayConfig).
func startGateway(t *testing.T, script, settings string, extra map[string]string, flags ...string) *gateway {
	t.Helper()
	up := startUpstream(t, script, upstreamKey)
	dir := gatewayConfig(t, up, settings, extra)
	d := startDaemonEnv(t, []string{upstreamKey}, dir, flags...)
	return &gateway{d: d, dir: dir, upstream: up, client: newClient(d.url, "unused")}
}

func newClient(daemonURL, apiKey string) openai.Client {
	return openai.NewClient(option.WithBaseURL(daemonURL+"/v1/"), option.WithAPIKey(apiKey),
		option.WithMaxRetries(0), option.WithRequestTimeout(30*time.Second))
}

// stockTools are the tools the test agent offers the model.
var stockTools = []openai.ChatCompletionToolUnionParam{
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_quote", Description: openai.String("The latest price of a stock symbol."),
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"symbol": map[string]string{"type": "string"}}},
	}),
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "place_trade", Description: openai.String("Buy a stock."),
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{
			"symbol": map[string]string{"type": "string"}, "amount": map[string]string{"type": "number"},
		}},
	}),
}

// ask starts a conversation with one user message.
func ask(question string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "scripted",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question)},
		Tools:    stockTools,
	}
}

// complete sends params and returns the completion and the response's request id.
func (g *gateway) complete(t *testing.T, params openai.ChatCompletionNewParams, opts ...option.RequestOption) (*openai.ChatCompletion, string) {
	t.Helper()
	var resp *http.Response
	c, err := g.client.Chat.Completions.New(context.Background(), params, append(opts, option.WithResponseInto(&resp))...)
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	if len(c.Choices) != 1 {
		t.Fatalf("%d choices", len(c.Choices))
	}
	return c, resp.Header.Get("X-Request-Id")
}

// runTools answers every tool call of c the way a client-side tool would, appending the
// assistant message and the tool messages to params.
func runTools(params *openai.ChatCompletionNewParams, c *openai.ChatCompletion, results map[string]string) {
	msg := c.Choices[0].Message
	params.Messages = append(params.Messages, msg.ToParam())
	for _, call := range msg.ToolCalls {
		var args struct {
			Symbol string `json:"symbol"`
		}
		_ = json.Unmarshal([]byte(call.Function.Arguments), &args)
		params.Messages = append(params.Messages, openai.ToolMessage(results[args.Symbol], call.ID))
	}
}

// execution is the part of an execution record these tests read.
type execution struct {
	Status        string `json:"status"`
	Lifecycle     string `json:"lifecycle"`
	Cause         string `json:"cause"`
	Error         string `json:"error"`
	FinalResponse string `json:"final_response"`
	PipelineHooks []struct {
		HookName string `json:"hook_name"`
		Phase    string `json:"phase"`
		Status   string `json:"status"`
	} `json:"pipeline_hooks"`
	Rejections []struct {
		DecisionID string `json:"decision_id"`
		Hook       string `json:"hook"`
		Violations []struct {
			Code string `json:"code"`
		} `json:"violations"`
	} `json:"rejections"`
	Operations []struct {
		StepID  string `json:"step_id"`
		Outcome string `json:"outcome"`
		Code    string `json:"code"`
		Finish  *struct {
			Status string `json:"status"`
		} `json:"finish"`
	} `json:"operations"`
	Phases []struct {
		Phase int `json:"phase"`
		Plan  struct {
			Steps []struct {
				StepID    string         `json:"step_id"`
				AgentName string         `json:"agent_name"`
				Metadata  map[string]any `json:"metadata"`
			} `json:"steps"`
		} `json:"plan"`
		Results []struct {
			StepID   string `json:"step_id"`
			Response any    `json:"response"`
		} `json:"results"`
	} `json:"phases"`
}

func (g *gateway) record(t *testing.T, id string) execution {
	t.Helper()
	status, body := g.d.do(t, http.MethodGet, "/v1/executions/"+id, "")
	if status != http.StatusOK {
		t.Fatalf("GET /v1/executions/%s: %d %s", id, status, body)
	}
	var rec execution
	if err := json.Unmarshal([]byte(body), &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// operations lists a record's operation checks as "step:outcome[:code][>finish]".
func (e execution) operations() []string {
	var out []string
	for _, o := range e.Operations {
		s := o.StepID + ":" + o.Outcome
		if o.Code != "" {
			s += ":" + o.Code
		}
		if o.Finish != nil {
			s += ">" + o.Finish.Status
		}
		out = append(out, s)
	}
	return out
}

// hooks lists a record's invocations as "hook@stage:status".
func (e execution) hooks() []string {
	var out []string
	for _, h := range e.PipelineHooks {
		out = append(out, h.HookName+"@"+h.Phase+":"+h.Status)
	}
	return out
}

// script renders scripted replies (JSON objects, one per argument) as a script.
func script(replies ...string) string {
	return `{"model": "scripted-model", "replies": [` + strings.Join(replies, ",\n") + `]}`
}
