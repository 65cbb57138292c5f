package openai

import (
	"bufio"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
)

func TestAssembler_MergesToolCallPieces(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []toolCall
	}{
		{
			name: "by index, arguments in pieces, two calls interleaved",
			chunks: []string{
				`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"get_quote","arguments":""}}]}}]}`,
				`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"get_quote","arguments":"{\"sy"}}]}}]}`,
				`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"symbol\":\"A\"}"}}]}}]}`,
				`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"mbol\":\"B\"}"}}]},"finish_reason":"tool_calls"}]}`,
			},
			want: []toolCall{
				{ID: "a", Type: "function", Function: functionCall{Name: "get_quote", Arguments: `{"symbol":"A"}`}},
				{ID: "b", Type: "function", Function: functionCall{Name: "get_quote", Arguments: `{"symbol":"B"}`}},
			},
		},
		{
			name: "no index: a new id starts a call; a name sent again is kept once",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"get_quote","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"get_","arguments":"{"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"quote","arguments":"}"}}]},"finish_reason":"tool_calls"}]}`,
			},
			want: []toolCall{
				{ID: "a", Function: functionCall{Name: "get_quote", Arguments: "{}"}},
				{ID: "b", Function: functionCall{Name: "get_quote", Arguments: "{}"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &assembler{}
			for _, c := range tt.chunks {
				if _, _, e := a.add([]byte(c)); e != nil {
					t.Fatal(e)
				}
			}
			r, e := a.reply()
			if e != nil {
				t.Fatal(e)
			}
			if !slices.Equal(r.calls, tt.want) {
				t.Errorf("calls = %+v\nwant    %+v", r.calls, tt.want)
			}
		})
	}
}

func TestAssembler_RefusesWhatCannotBeReviewed(t *testing.T) {
	tests := map[string][]string{
		"a second choice":          {`{"choices":[{"index":1,"delta":{"content":"x"},"finish_reason":"stop"}]}`},
		"legacy function_call":     {`{"choices":[{"index":0,"delta":{"function_call":{"name":"f"}},"finish_reason":"stop"}]}`},
		"no finish_reason":         {`{"choices":[{"index":0,"delta":{"content":"x"}}]}`},
		"a call without id":        {`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]},"finish_reason":"tool_calls"}]}`},
		"not a chunk":              {`{"choices":"x"}`},
		"an error event":           {`{"error":{"message":"boom"}}`},
		"tool calls read two ways": {`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}],"TOOL_CALLS":[]},"finish_reason":"stop"}]}`},
	}
	for name, chunks := range tests {
		t.Run(name, func(t *testing.T) {
			a := &assembler{}
			var e *apiError
			for _, c := range chunks {
				if _, _, e = a.add([]byte(c)); e != nil {
					break
				}
			}
			if e == nil {
				_, e = a.reply()
			}
			if e == nil || e.Status != http.StatusBadGateway {
				t.Errorf("error = %v, want a 502", e)
			}
		})
	}
}

// A reply a client could read differently from the review is malformed: encoding/json
// folds member names and keeps the last, a client in another language matches exactly,
// so in {"choices":[tool call],"Choices":[answer]} the review would see the answer and
// forward the reply as it came, while the client ran the tool call.
func TestParseCompletion_RefusesMembersReadTwoWays(t *testing.T) {
	call := `[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"place_trade","arguments":"{}"}}]},"finish_reason":"tool_calls"}]`
	answer := `[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]`
	for name, body := range map[string]string{
		"choices, then Choices":         `{"choices":` + call + `,"Choices":` + answer + `}`,
		"a repeated member":             `{"choices":` + call + `,"choices":` + answer + `}`,
		"tool_calls in another case":    `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi","Tool_Calls":[]},"finish_reason":"stop"}]}`,
		"a long s folding into choices": `{"choiceſ":` + answer + `}`,
		"a repeat deep in the content":  `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi","content":"ho"},"finish_reason":"stop"}]}`,
	} {
		if rep, e := parseCompletion([]byte(body)); e == nil || e.Status != http.StatusBadGateway {
			t.Errorf("%s: %+v, %v, want a malformed reply (502)", name, rep, e)
		}
	}
	// Members the gateway does not read may take any case, once each.
	if _, e := parseCompletion([]byte(`{"choices":` + answer + `,"Service_Tier":"x","service_tier":"y"}`)); e == nil {
		t.Error("two members folding together were accepted")
	}
	if _, e := parseCompletion([]byte(`{"choices":` + answer + `,"X-Vendor":{"A":1,"a":[]}}`)); e == nil {
		t.Error("two members folding together in a vendor object were accepted")
	}
	if _, e := parseCompletion([]byte(`{"choices":` + answer + `,"X-Vendor":{"A":1,"B":[{"c":null}]},"usage":{"total_tokens":1}}`)); e != nil {
		t.Errorf("a vendor member: %v", e)
	}
	// Names that only Unicode-aware upper- and lower-casing relate to a read member are
	// not that member for encoding/json (nor for any client): "ı" and "İ" fold to
	// themselves.
	for _, body := range []string{`{"choices":` + answer + `,"ıd":"x"}`, `{"choices":` + answer + `,"İndex":1}`} {
		if _, e := parseCompletion([]byte(body)); e != nil {
			t.Errorf("%s: %v", body, e)
		}
	}
}

func TestSSEReader(t *testing.T) {
	body := ": a comment\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n" +
		"data:no-space\n\n" + "data: " + strings.Repeat("x", 70<<10) + "\n\n" + "data: last"
	s := &sseReader{x: &exchange{timer: time.NewTimer(time.Hour), timeout: time.Hour}, r: bufio.NewReaderSize(strings.NewReader(body), 32<<10)}
	var got []string
	for {
		data, ok, e := s.next()
		if e != nil {
			t.Fatal(e)
		}
		if !ok {
			break
		}
		got = append(got, string(data))
	}
	want := []string{"{\"a\":\n1}", "no-space", strings.Repeat("x", 70<<10), "last"}
	if !slices.Equal(got, want) {
		t.Errorf("events = %.80q", got)
	}
}

// The answer is written by the gateway: the reviewed message and the reply's id,
// model and usage; every other member of the upstream's reply, text-bearing ones
// (reasoning_content, logprobs, annotations, audio) included, is dropped.
func TestCompletionBody_WritesOnlyWhatWasReviewed(t *testing.T) {
	rep, e := parseCompletion([]byte(`{"id":"x","model":"m","service_tier":"default","usage":{"total_tokens":3},
		"choices":[{"index":0,"logprobs":{"content":[{"token":"SECRET","logprob":0}]},"finish_reason":"stop",
		"message":{"role":"assistant","content":"SECRET","reasoning_content":"SECRET","annotations":[{"text":"SECRET"}],
		"audio":{"transcript":"SECRET"}}}]}`))
	if e != nil {
		t.Fatal(e)
	}
	text := "ok"
	body := completionBody(rep, &answer{content: &text, finish: "stop"})
	for _, want := range []string{`"id":"x"`, `"model":"m"`, `"usage":{"total_tokens":3}`, `"content":"ok"`, `"finish_reason":"stop"`, `"logprobs":null`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("%s lacks %s", body, want)
		}
	}
	for _, gone := range []string{"SECRET", "tool_calls", "service_tier"} {
		if strings.Contains(string(body), gone) {
			t.Errorf("%s still has %s", body, gone)
		}
	}
}

func TestStepIndex_FallsBackToThePositionInTheRound(t *testing.T) {
	conv := &conversation{rounds: [][]toolCall{{{ID: "a"}, {ID: "b"}}}}
	idx := stepIndex{1: {"b": "step-1-3"}}
	if got := idx.step(conv, toolResult{phase: 1, call: toolCall{ID: "b"}}); got != "step-1-3" {
		t.Errorf("recorded step = %s", got)
	}
	if got := idx.step(conv, toolResult{phase: 1, call: toolCall{ID: "a"}}); got != "step-1-1" {
		t.Errorf("fallback step = %s", got)
	}
	if got := stepID(2, 3, 1); got != "step-2r3-1" {
		t.Errorf("the third attempt at phase 2: %s", got)
	}
}

func TestRewritesResponse(t *testing.T) {
	gen := func(steps ...string) *config.Generation {
		return &config.Generation{Hooks: []config.HookInfo{
			{Name: "p", Stage: "after_planning", Steps: []string{"rego"}},
			{Name: "s", Stage: "after_synthesis", Steps: steps},
		}}
	}
	for steps, want := range map[string]bool{
		"cache.store,log,effect": false,
		"log,redact":             true,
		"truncate":               true,
		"some.future.action":     true,
	} {
		if got := rewritesResponse(gen(strings.Split(steps, ",")...)); got != want {
			t.Errorf("after_synthesis %s: rewritesResponse = %v, want %v", steps, got, want)
		}
	}
	if rewritesResponse(&config.Generation{}) {
		t.Error("a generation without after_synthesis hooks rewrites")
	}
}

func TestReadBody(t *testing.T) {
	for _, size := range []int64{-1, 0, 10, 11, 12} { // unknown, and announced short, at the limit, exact and long
		if _, e := readBody(strings.NewReader(strings.Repeat("a", 11)), size, 10); e == nil || e.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("11 bytes (%d announced) over a limit of 10: %v", size, e)
		}
		if data, e := readBody(strings.NewReader(`{"a":"bc"}`), size, 10); e != nil || string(data) != `{"a":"bc"}` {
			t.Errorf("10 bytes (%d announced) at a limit of 10: %q %v", size, data, e)
		}
	}
	if _, e := readBody(strings.NewReader("{\"a\":\"\xff\"}"), -1, 100); e == nil || e.Code != codeInvalidJSON {
		t.Errorf("invalid UTF-8: %v", e)
	}
	if data, e := readBody(io.LimitReader(strings.NewReader("{}"), 2), 2, 2); e != nil || string(data) != "{}" {
		t.Errorf("a body at the limit: %q %v", data, e)
	}
}

// Tool call arguments are one JSON object; anything else rejects the round.
func TestParseArguments(t *testing.T) {
	for args, ok := range map[string]bool{
		``: true, ` `: true, `{}`: true, `{"symbol":"ACME"} `: true,
		`null`: false, `[]`: false, `{"a":1}}`: false, `{"a":1}]`: false, `{} {}`: false, `{"a":`: false,
		`{"amount":5,"Amount":50000}`: false, `{"amount":5,"amount":50000}`: false, `{"o":{"k":1,"\u212a":2}}`: false,
		`{"amount":5,"Symbol":"ACME"}`: true,
	} {
		if _, err := parseArguments(args); (err == nil) != ok {
			t.Errorf("parseArguments(%q) = %v, want ok %v", args, err, ok)
		}
	}
}
