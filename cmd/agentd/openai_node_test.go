package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nodeTestDir holds the Node test of the gateway and its package.json; its
// dependencies are installed by scripts/npm-deps.sh.
const nodeTestDir = "testdata/openai-node"

// TestOpenAIGateway_NodeClient runs testdata/openai-node/gateway.test.mjs, written with
// the official OpenAI Node library, against the gateway. Under CI=true a missing node
// or library fails the test; elsewhere it is skipped with how to install them.
func TestOpenAIGateway_NodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	case !exists(filepath.Join(nodeTestDir, "node_modules", "openai", "package.json")):
		missing = "the openai npm package is not installed in " + nodeTestDir
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (scripts/npm-deps.sh installs it)", missing)
		}
		t.Skipf("%s: run scripts/npm-deps.sh to run this test", missing)
	}
	g := startGateway(t, script(
		`{"user": "node: buy 100 ACME", "round": 1, "chunk": 3,
		  "tool_calls": [{"id": "call_node_trade", "name": "place_trade", "arguments": "{\"symbol\":\"ACME\",\"amount\":18250}"}]}`,
		`{"user": "node: what is ACME trading at?", "round": 1, "chunk": 3,
		  "tool_calls": [{"id": "call_node_quote", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\"}"}]}`,
		`{"user": "node: what is ACME trading at?", "round": 2, "chunk": 4, "content": "ACME trades at 182.50 USD."}`,
		`{"user": "node: falsy false", "raw": "data: {\"error\":false,\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_evil\",\"type\":\"function\",\"function\":{\"name\":\"get_quote\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"}`,
		`{"user": "node: falsy zero", "raw": "data: {\"error\":0,\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_evil\",\"type\":\"function\",\"function\":{\"name\":\"get_quote\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"}`,
		`{"user": "node: falsy empty", "raw": "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi.\"},\"finish_reason\":null}]}\n\ndata: {\"error\":\"\",\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_evil\",\"type\":\"function\",\"function\":{\"name\":\"get_quote\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"}`,
		`{"user": "node: folded amount", "round": 1,
		  "tool_calls": [{"id": "call_node_fold", "name": "get_quote", "arguments": "{\"symbol\":\"ACME\",\"amount\":5,\"Amount\":50000}"}]}`,
	), "", nil)
	cmd := exec.Command(node, "gateway.test.mjs")
	cmd.Dir = nodeTestDir
	cmd.Env = append(os.Environ(), "AGENTD_URL="+g.d.url)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "ok   ") != 6 {
		t.Fatalf("node gateway.test.mjs: %v\n%s\n--- agentd log ---\n%s", err, out, g.d.stderr)
	}
	t.Logf("%s", out)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
