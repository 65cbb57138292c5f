package openai

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"testing"

	"github.com/agentd-dev/agentd/config"
)

// FuzzChatRequest feeds arbitrary bodies through everything the gateway reads of a
// client's call before a stage runs. It must never panic; a body it accepts has a
// conversation, a bounded request id and an upstream body that is valid JSON.
func FuzzChatRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}],"stream":true,"metadata":{"tenant":"t","request_id":"r"}}`,
		`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_quote","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"{\"price\":1}"}]}`,
		`{"n":2,"messages":[{"role":"user","content":"q"}]}`,
		`{"messages":[{"role":"tool","tool_call_id":"x","content":"1"}]}`,
		`{"messages":[]}`, `[]`, `null`, `{"messages":[{"role":"user","content":7}]}`,
	} {
		f.Add([]byte(seed))
	}
	cfg := &config.OpenAIGateway{RequestIDHeader: "X-Request-Id", RequestIDField: []string{"metadata", "request_id"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := parseRequest(body)
		if e != nil {
			return
		}
		conv, e := analyze(req.messages)
		if e != nil {
			return
		}
		id, token, e := requestID(cfg, http.Header{}, req, conv, "t")
		if e == nil && (id == "" || len(id) > maxRequestID || !validToken(token)) {
			t.Fatalf("request id %q, token %q", id, token)
		}
		const system = "s <&> \u2028"
		out, err := req.withSystem(system)
		if want := marshalWithSystem(t, req, system); err != nil || !bytes.Equal(out, want) {
			t.Fatalf("upstream body %q (%v), encoding/json writes %q", out, err, want)
		}
	})
}

// marshalWithSystem is withSystem as encoding/json writes it: the members as a map,
// the messages with the system message after the leading system and developer ones.
func marshalWithSystem(t *testing.T, req *chatRequest, system string) []byte {
	lead := 0
	for lead < len(req.messages) && (req.messages[lead].Role == "system" || req.messages[lead].Role == "developer") {
		lead++
	}
	var msgs []json.RawMessage
	for _, m := range req.messages[:lead] {
		msgs = append(msgs, m.raw)
	}
	msgs = append(msgs, mustJSON(map[string]string{"role": "system", "content": system}))
	for _, m := range req.messages[lead:] {
		msgs = append(msgs, m.raw)
	}
	fields := maps.Clone(req.fields)
	fields["messages"] = mustJSON(msgs)
	out, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzUpstreamReply feeds arbitrary upstream replies, whole and as stream events, to the
// parsers. They must never panic, and a reply they accept has tool calls with unique
// ids and function names.
func FuzzUpstreamReply(f *testing.F) {
	for _, seed := range []string{
		`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"index":0,"delta":{"content":"x","refusal":"y"},"finish_reason":"stop"}],"usage":{"total_tokens":1}}`,
		`{"error":{"message":"x"}}`, `{"choices":[]}`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if rep, e := parseCompletion(data); e == nil {
			assertCalls(t, rep.calls)
			if out := completionBody(rep, &answer{finish: "stop"}); !json.Valid(out) {
				t.Fatalf("rewritten reply %q", out)
			}
		}
		a := &assembler{}
		if _, _, e := a.add(data); e != nil {
			return
		}
		if _, _, e := a.add(data); e != nil {
			return
		}
		if rep, e := a.reply(); e == nil {
			assertCalls(t, rep.calls)
		}
	})
}

func assertCalls(t *testing.T, calls []toolCall) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range calls {
		if c.ID == "" || seen[c.ID] || c.isFunction() && c.Function.Name == "" {
			t.Fatalf("accepted calls %+v", calls)
		}
		seen[c.ID] = true
	}
}
