package openai

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine/jsonread"
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

// FuzzFastRead_AgreesWithEncodingJSON holds the gateway's readers (fastread.go) to
// their contract: a text they take, encoding/json takes too, to the same value.
func FuzzFastRead_AgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		toolRound, `{"choices":null,"usage":null,"id":null}`, `{"choices":[{"message":null,"finish_reason":null}]}`,
		`{"choices":[{"message":{"content":"a\nb","tool_calls":[],"function_call":null,"Role":"x"}}],"Id":"x"}`,
		`{"model":"m","metadata":{"tenant":"acme","n":[1,{"a":null}]},"messages":[{"role":"user","content":"q \u00e9"}]}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"t"}]}],"stream":true}`,
		`{"messages":[{"role":"user","content":"a","role":"user"}]}`, `{"messages":[{"ROLE":"user"}]}`, `{"messages":[{"rôle":"user"}]}`,
		`{"prompt_tokens":1,"completion_tokens":null,"total_tokens":-3,"prompt_tokens_details":{"cached_tokens":2,"audio_tokens":null},"completion_tokens_details":null}`,
		`{"total_tokens":1.5}`, `{"prompt_tokens_details":{"Cached_tokens":1}}`, `true`, `"s"`, `{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got completionWire
		if r := jsonread.New(data); readCompletion(r, &got) && r.End() {
			var want completionWire
			if err := json.Unmarshal(data, &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: read a completion %+v, encoding/json %+v (%v)", data, got, want, err)
			}
		}
		var usage usageWire
		if r := jsonread.New(data); readUsage(r, &usage) && r.End() {
			var want usageWire
			if err := json.Unmarshal(data, &want); err != nil || !reflect.DeepEqual(usage, want) {
				t.Fatalf("%q: read usage %+v, encoding/json %+v (%v)", data, usage, want, err)
			}
		}
		var req chatRequest
		if readRequest(data, &req) {
			var fields map[string]json.RawMessage
			var raws []json.RawMessage
			if err := json.Unmarshal(data, &fields); err != nil || !reflect.DeepEqual(req.fields, fields) {
				t.Fatalf("%q: read members %q, encoding/json %q (%v)", data, req.fields, fields, err)
			}
			if err := json.Unmarshal(fields["messages"], &raws); err != nil || len(raws) != len(req.messages) {
				t.Fatalf("%q: read %d messages, encoding/json %d (%v)", data, len(req.messages), len(raws), err)
			}
			for i, raw := range raws {
				want := message{raw: raw}
				if err := json.Unmarshal(raw, &want); err != nil || !reflect.DeepEqual(req.messages[i], want) {
					t.Fatalf("%q: read message %+v, encoding/json %+v (%v)", data, req.messages[i], want, err)
				}
			}
		}
		for _, v := range []struct{ got, want any }{{new(bool), new(bool)}, {new(string), new(string)}, {new(map[string]any), new(map[string]any)}} {
			if readOptional(data, v.got) {
				if err := json.Unmarshal(data, v.want); err != nil || !reflect.DeepEqual(v.got, v.want) {
					t.Fatalf("%q: read %#v, encoding/json %#v (%v)", data, v.got, v.want, err)
				}
			}
		}
	})
}
