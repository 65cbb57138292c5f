package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestVetLine(t *testing.T) {
	for _, c := range []struct {
		name string
		line string
		// want is the line passed on: the line itself, an error response for id, or nothing.
		want    string
		errorID any
	}{
		{name: "a response", line: `{"jsonrpc":"2.0","id":3,"result":{}}`, want: "same"},
		{name: "a request", line: `{"jsonrpc":"2.0","id":"x","method":"ping"}`, want: "same"},
		{name: "a notification", line: `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, want: "same"},
		{name: "not JSON", line: `this is not JSON-RPC`},
		{name: "a cut response", line: `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"te`, want: "error", errorID: int64(7)},
		{name: "a cut response with a string id", line: `{"jsonrpc":"2.0","id":"call-\"9","res`, want: "error", errorID: `call-"9`},
		{name: "JSON that is no message, with an id", line: `{"id":4,"result":1,"error":{"code":1,"message":"both"}}`, want: "error", errorID: int64(4)},
		{name: "a cut request does not answer our calls", line: `{"jsonrpc":"2.0","id":7,"method":"sampling/create`},
		{name: "a malformed request does not answer our calls", line: `{"jsonrpc":"1.0","id":7,"method":5}`},
		{name: "an array", line: `[{"jsonrpc":"2.0","id":1,"result":{}}]`},
		{name: "no id", line: `{"jsonrpc":"2.0","result":{}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			out := vetLine([]byte(c.line), "up", lineLog{logger: slog.New(slog.NewTextHandler(&logs, nil))})
			switch c.want {
			case "same":
				if string(out) != c.line+"\n" || logs.Len() != 0 {
					t.Errorf("vetLine = %q (log %q), want the line passed on", out, logs.String())
				}
				return
			case "":
				if out != nil {
					t.Errorf("vetLine = %q, want the line dropped", out)
				}
			case "error":
				msg, err := jsonrpc.DecodeMessage(bytes.TrimSuffix(out, []byte("\n")))
				resp, ok := msg.(*jsonrpc.Response)
				if err != nil || !ok || resp.ID.Raw() != c.errorID || resp.Error == nil {
					t.Errorf("vetLine = %q, want an error response for id %v", out, c.errorID)
				}
			}
			if !strings.Contains(logs.String(), "malformed message from MCP upstream dropped") {
				t.Errorf("no log line for a dropped line: %q", logs.String())
			}
		})
	}
}

func TestVetLines_KeepsGoingAfterDroppedLines(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":2,"result":{"x":"` + strings.Repeat("y", maxLine) + `"}}`
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`garbage`,
		long,
		``,
		`{"jsonrpc":"2.0","id":3,"result":{}}` + "\r",
	}, "\n")
	r := vetLines(strings.NewReader(in), "up", lineLog{logger: slog.New(slog.DiscardHandler)})
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var ids []any
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		msg, err := jsonrpc.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		resp := msg.(*jsonrpc.Response)
		ids = append(ids, resp.ID.Raw())
		if (resp.ID.Raw() == int64(2)) != (resp.Error != nil) {
			t.Errorf("response %v: error %v", resp.ID.Raw(), resp.Error)
		}
	}
	if got, _ := json.Marshal(ids); string(got) != "[1,2,3]" {
		t.Errorf("ids passed on = %s, want [1,2,3] (2 as an error: the line was over the limit)", got)
	}
}

// FuzzVetLine: whatever an upstream writes, the gateway passes on nothing but JSON-RPC
// messages, and answers no call for a line that is a request.
func FuzzVetLine(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":3,"result":{}}`, `{"jsonrpc":"2.0","id":7,"result":{"content":[`,
		`{"jsonrpc":"2.0","method":"x"}`, `not json`, `{"id":"a\"b"}`, `[1,2]`, `{"id":null}`,
	} {
		f.Add(s)
	}
	logger := lineLog{logger: slog.New(slog.DiscardHandler)}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n") {
			return
		}
		out := vetLine([]byte(line), "up", logger)
		if out == nil {
			return
		}
		if !bytes.HasSuffix(out, []byte("\n")) {
			t.Fatalf("%q: no newline", out)
		}
		msg, err := jsonrpc.DecodeMessage(bytes.TrimSuffix(out, []byte("\n")))
		if err != nil {
			t.Fatalf("passed on %q, which is not a message: %v", out, err)
		}
		if _, isResp := msg.(*jsonrpc.Response); isResp && string(out) != line+"\n" && strings.Contains(line, `"method"`) {
			t.Fatalf("%q answers a call, but the line was a request", line)
		}
	})
}
