package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// script is what the upstream answers: the first reply whose conditions match a
// request is replayed. No model runs.
type script struct {
	// Model is the model id the replies and GET /v1/models name.
	Model   string  `json:"model"`
	Replies []reply `json:"replies"`
}

// reply is one scripted answer and the requests it answers.
type reply struct {
	// Name is for the script's reader.
	Name string `json:"name"`
	// User, when set, must be part of the text of the request's last user message.
	User string `json:"user"`
	// Round, when set, must be the request's round: 1 plus the assistant messages with
	// tool calls after its last user message.
	Round int `json:"round"`

	Content   *string          `json:"content"`
	ToolCalls []scriptedCall   `json:"tool_calls"`
	Finish    string           `json:"finish_reason"`
	Usage     *json.RawMessage `json:"usage"`
	// EchoSystem answers with the text of the request's system messages, one per line.
	EchoSystem bool `json:"echo_system"`

	// Status and Body answer an error: the status with Body as the JSON body.
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
	// Raw is written as the body as it is (a malformed reply, or a hand-made stream).
	Raw *string `json:"raw"`
	// Delay waits before answering.
	Delay duration `json:"delay"`
	// Chunk is how many bytes of content or arguments one stream chunk carries
	// (default 5); CutAfter, when set, drops the connection after that many chunks.
	Chunk    int `json:"chunk"`
	CutAfter int `json:"cut_after"`
	// NoStream answers with one completion even when a stream is asked for, as an
	// upstream that does not stream does.
	NoStream bool `json:"no_stream"`
}

// scriptedCall is a tool call of a scripted reply.
type scriptedCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type duration struct{ time.Duration }

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	d.Duration = v
	return err
}

func loadScript(path string) (*script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s script
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Model == "" {
		s.Model = "scripted"
	}
	return &s, nil
}

// match returns the first reply for a request whose last user message says user, in
// round round.
func (s *script) match(user string, round int) (*reply, bool) {
	for i := range s.Replies {
		r := &s.Replies[i]
		if strings.Contains(user, r.User) && (r.Round == 0 || r.Round == round) {
			return r, true
		}
	}
	return nil, false
}
