package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/docs"
	"github.com/agentd-dev/agentd/docs/apitest"
)

// TestHandler_AnswersAsTheAPIDocumentSays drives /mcp through every status
// docs/openapi.yaml gives it (401 and 403 are the API's authorization and browser
// boundary, tested with the server; 429 is TestGateway_SessionsAreBounded's)
// and checks each answer's status, media type and agentd header against the document.
func TestHandler_AnswersAsTheAPIDocumentSays(t *testing.T) {
	type response struct {
		Ref     string                     `json:"$ref"`
		Content map[string]json.RawMessage `json:"content"`
		Headers map[string]json.RawMessage `json:"headers"`
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Responses map[string]struct {
				Content map[string]json.RawMessage `json:"content"`
			} `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(docs.OpenAPIJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	operations := map[string]map[string]response{}
	for method, raw := range doc.Paths["/mcp"] {
		var op struct {
			Responses map[string]response `json:"responses"`
		}
		if json.Unmarshal(raw, &op) == nil && op.Responses != nil {
			operations[method] = op.Responses
		}
	}
	h := newHarness(t, stdioServer("local", ""))
	h.waitReady("local")
	send := func(method string, header map[string]string, body string) *http.Response {
		req, err := http.NewRequest(method, h.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if host := header["Host"]; host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"doc","version":"1"}}}`
	opened := send("POST", nil, initialize)
	opened.Body.Close()
	session := opened.Header.Get("Mcp-Session-Id")
	in := map[string]string{"Mcp-Session-Id": session}
	for _, c := range []struct {
		name, method string
		header       map[string]string
		body         string
		status       int
	}{
		{"initialize", "POST", nil, initialize, 200},
		{"a notification", "POST", in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 202},
		{"a request", "POST", in, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 200},
		{"malformed JSON", "POST", in, `{nope`, 400},
		{"a wrong Accept", "POST", map[string]string{"Mcp-Session-Id": session, "Accept": "text/plain"}, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, 400},
		{"an unknown session", "POST", map[string]string{"Mcp-Session-Id": "nope"}, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, 404},
		{"a body over 4 MiB", "POST", in, `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"` + strings.Repeat("x", 5<<20) + `"}}`, 413},
		{"a wrong Content-Type", "POST", map[string]string{"Mcp-Session-Id": session, "Content-Type": "text/plain"}, `{}`, 415},
		{"a stream without a session", "GET", nil, "", 400},
		{"a stream of an unknown session", "GET", map[string]string{"Mcp-Session-Id": "nope"}, "", 404},
		{"an end without a session", "DELETE", nil, "", 400},
		{"an end of an unknown session", "DELETE", map[string]string{"Mcp-Session-Id": "nope"}, "", 404},
		{"an end", "DELETE", in, "", 204},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := send(c.method, c.header, c.body)
			defer resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("%s /mcp answered %d, want %d", c.method, resp.StatusCode, c.status)
			}
			documented, ok := operations[strings.ToLower(c.method)][fmt.Sprint(c.status)]
			if !ok {
				t.Fatalf("docs/openapi.yaml gives %s /mcp no %d", c.method, c.status)
			}
			content := documented.Content
			if ref := strings.TrimPrefix(documented.Ref, "#/components/responses/"); ref != "" {
				content = doc.Components.Responses[ref].Content
			}
			mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if _, ok := content[mediaType]; !ok && !(len(content) == 0 && mediaType == "") {
				t.Errorf("%s /mcp %d is %q; the document gives %v", c.method, c.status, mediaType, keys(content))
			}
			if _, ok := documented.Headers["X-Agentd-Request-Id"]; ok && resp.Header.Get(RequestIDHeader) != requestID(resp.Header.Get("Mcp-Session-Id")+c.header["Mcp-Session-Id"]) {
				t.Errorf("X-Agentd-Request-Id = %q", resp.Header.Get(RequestIDHeader))
			}
		})
	}
}

// TestStatus_MatchesTheAPIDocument: the gateway's status is what docs/openapi.yaml
// documents under GET /v1/status's gateways.mcp, for ready and failing upstreams.
func TestStatus_MatchesTheAPIDocument(t *testing.T) {
	h := newHarness(t, stdioServer("local", "")+"      - {name: broken, namespace: test, command: [/nonexistent/x], tools: [{name: echo}]}\n")
	h.waitReady("local")
	h.waitFor("broken failing", func(st Status) bool { return st.Servers[1].State == stateRestarting })
	body, err := json.Marshal(h.gw.Status(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	doc := apitest.Load(t)
	apitest.Validate(t, "the gateway's status", doc.Schema(t, "#/components/schemas/MCPGatewayStatus"), body)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
