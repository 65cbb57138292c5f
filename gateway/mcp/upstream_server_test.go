package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The in-repo upstream: an MCP server built with the official Go SDK. The test binary
// runs it over stdio when AGENTD_MCP_TEST_UPSTREAM names it (the gateway's config
// spawns os.Args[0] with that variable in its env), and the HTTP tests serve it
// in-process. Every tool call is appended to the file AGENTD_MCP_TEST_LOG names, so
// tests see what reached the upstream.

const (
	envUpstream = "AGENTD_MCP_TEST_UPSTREAM"
	envCallLog  = "AGENTD_MCP_TEST_LOG"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(envUpstream); name != "" {
		os.Exit(runStdioUpstream(name))
	}
	os.Exit(m.Run())
}

// runStdioUpstream serves the test upstream over stdin/stdout until stdin ends.
func runStdioUpstream(name string) int {
	s := newTestUpstream(name, os.Getenv(envCallLog))
	if err := s.Run(context.Background(), garbling{&mcp.StdioTransport{}}); err != nil {
		fmt.Fprintln(os.Stderr, "test upstream:", err)
		return 1
	}
	return 0
}

// newTestUpstream returns the test upstream's server. Its tools:
//
//	echo {message}         "Echo: <message>"
//	add {a, b}             structured {sum}
//	wipe, secret           "wiped", "secret" (tests keep them from being called)
//	slow {steps, delay_ms} one progress notification per step; logs "slow cancelled" when cancelled
//	crash                  exits the process mid-call
//	garble                 answered with a malformed message (see garbling)
//	noise                  writes a line that is not JSON-RPC first, then answers "noise"
//	env {name}             the value of an environment variable, "" when unset
//	pid                    the process id
//	grow                   adds the tool "extra" (a tools/list_changed notification)
//	extra                  "extra"
//
// Resources test://doc/public and test://doc/private, the template test://dyn/{id},
// and the prompts greet {name} and secret-prompt.
func newTestUpstream(name, callLog string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test-upstream-" + name, Version: "1"}, nil)
	var logMu sync.Mutex
	logCall := func(line string) {
		if callLog == "" {
			return
		}
		logMu.Lock()
		defer logMu.Unlock()
		f, err := os.OpenFile(callLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return
		}
		defer f.Close()
		fmt.Fprintln(f, line)
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	tool := func(t string, h func(ctx context.Context, req *mcp.CallToolRequest, args map[string]any) *mcp.CallToolResult) {
		s.AddTool(&mcp.Tool{Name: t, Description: "test tool " + t, InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				args := map[string]any{}
				_ = json.Unmarshal(req.Params.Arguments, &args)
				logCall(name + " " + t + " " + string(req.Params.Arguments))
				return h(ctx, req, args), nil
			})
	}
	tool("echo", func(_ context.Context, _ *mcp.CallToolRequest, a map[string]any) *mcp.CallToolResult {
		return text(fmt.Sprintf("Echo: %v (from %s)", a["message"], name))
	})
	tool("add", func(_ context.Context, _ *mcp.CallToolRequest, a map[string]any) *mcp.CallToolResult {
		sum, _ := a["a"].(float64)
		b, _ := a["b"].(float64)
		res := text(strconv.FormatFloat(sum+b, 'f', -1, 64))
		res.StructuredContent = map[string]any{"sum": sum + b}
		return res
	})
	for _, t := range []string{"wipe", "secret"} {
		tool(t, func(context.Context, *mcp.CallToolRequest, map[string]any) *mcp.CallToolResult { return text(t) })
	}
	tool("slow", func(ctx context.Context, req *mcp.CallToolRequest, a map[string]any) *mcp.CallToolResult {
		steps, _ := a["steps"].(float64)
		delay, _ := a["delay_ms"].(float64)
		for i := range int(steps) {
			if token := req.Params.GetProgressToken(); token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i + 1), Total: steps})
			}
			select {
			case <-ctx.Done():
				logCall(name + " slow cancelled")
				return text("cancelled")
			case <-time.After(time.Duration(delay) * time.Millisecond):
			}
		}
		return text("slow done")
	})
	tool("crash", func(context.Context, *mcp.CallToolRequest, map[string]any) *mcp.CallToolResult {
		os.Exit(3)
		return nil
	})
	tool("garble", func(context.Context, *mcp.CallToolRequest, map[string]any) *mcp.CallToolResult {
		return text(garbleMarker)
	})
	tool("noise", func(context.Context, *mcp.CallToolRequest, map[string]any) *mcp.CallToolResult {
		fmt.Fprintln(os.Stdout, "this line is not JSON-RPC")
		return text("noise")
	})
	tool("env", func(_ context.Context, _ *mcp.CallToolRequest, a map[string]any) *mcp.CallToolResult {
		v, _ := a["name"].(string)
		return text(os.Getenv(v))
	})
	tool("pid", func(context.Context, *mcp.CallToolRequest, map[string]any) *mcp.CallToolResult {
		return text(strconv.Itoa(os.Getpid()))
	})
	tool("grow", func(context.Context, *mcp.CallToolRequest, map[string]any) *mcp.CallToolResult {
		tool("extra", func(context.Context, *mcp.CallToolRequest, map[string]any) *mcp.CallToolResult { return text("extra") })
		return text("grown")
	})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "contents of " + req.Params.URI}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "test://doc/public", Name: "public"}, read)
	s.AddResource(&mcp.Resource{URI: "test://doc/private", Name: "private"}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://dyn/{id}", Name: "dynamic"}, read)
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "name"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello " + req.Params.Arguments["name"]}}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "secret-prompt"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "secret"}}}}, nil
	})
	return s
}

// garbleMarker in a tool result makes garbling cut the response carrying it in half.
const garbleMarker = "GARBLE-THIS-RESPONSE"

// garbling is a transport whose connection writes a response carrying garbleMarker as
// a malformed line: the first half of its JSON.
type garbling struct{ mcp.Transport }

func (t garbling) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &garblingConn{Connection: c}, nil
}

type garblingConn struct{ mcp.Connection }

func (c *garblingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || !bytes.Contains(resp.Result, []byte(garbleMarker)) {
		return c.Connection.Write(ctx, msg)
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(data[:len(data)/2], '\n'))
	return err
}
