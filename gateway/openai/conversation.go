package openai

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// conversation is where a request stands, as its messages tell. The last user message
// opens a request (its turn); every assistant message with tool calls after it is one
// round, the plan phase of its number; the tool messages after it are the results.
type conversation struct {
	// turn is the index of the last user message and text its text: the request.
	turn int
	text string
	// newTurn is set when the last message is the user's: the call opens the request.
	newTurn bool
	// rounds holds the tool calls of each round after the turn; round k is phase k+1.
	rounds  [][]toolCall
	results []toolResult
}

// toolResult is one tool message of the turn and the call it answers.
type toolResult struct {
	phase   int
	call    toolCall
	content json.RawMessage
}

// analyze reads the conversation of a call. The last message must be the user's (a new
// turn) or a tool result (the next round of the turn), and every tool message of the
// turn must answer a tool call of one of its rounds.
func analyze(msgs []message) (*conversation, *apiError) {
	c := &conversation{turn: -1}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			c.turn = i
			break
		}
	}
	last := len(msgs) - 1
	switch {
	case c.turn < 0:
		return nil, badRequest(codeInvalidMessages, "messages", "the conversation has no user message")
	case msgs[last].Role != "user" && msgs[last].Role != "tool":
		return nil, badRequest(codeInvalidMessages, "messages["+strconv.Itoa(last)+"].role",
			"the last message must be the user's or a tool result, not %s's", msgs[last].Role)
	}
	c.text, _ = text(msgs[c.turn].Content)
	c.newTurn = c.turn == last
	for i, m := range msgs[c.turn+1:] {
		switch {
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			c.rounds = append(c.rounds, m.ToolCalls)
		case m.Role == "tool":
			r, ok := c.answered(m)
			if !ok {
				return nil, badRequest(codeInvalidMessages, "messages["+strconv.Itoa(c.turn+1+i)+"].tool_call_id",
					"tool message answers %q, which is no tool call of this turn", m.ToolCallID)
			}
			c.results = append(c.results, r)
		}
	}
	return c, nil
}

// answered finds the call a tool message answers, the latest round first.
func (c *conversation) answered(m message) (toolResult, bool) {
	for k := len(c.rounds) - 1; k >= 0; k-- {
		for _, call := range c.rounds[k] {
			if call.ID == m.ToolCallID {
				return toolResult{phase: k + 1, call: call, content: m.Content}, true
			}
		}
	}
	return toolResult{}, false
}

// maxRequestID bounds a request id given by the client.
const maxRequestID = 128

// requestID returns the call's request id: the configured header, else the configured
// body field, else one derived from the conversation up to its last user message (and
// the body's user), which every round of the turn shares (derived is then set).
func requestID(cfg *config.OpenAIGateway, h http.Header, req *chatRequest, conv *conversation) (id string, derived bool, e *apiError) {
	if id := h.Get(cfg.RequestIDHeader); id != "" {
		return id, false, checkID(id, cfg.RequestIDHeader)
	}
	if cfg.RequestIDField != nil {
		if raw, ok := lookup(req.fields, cfg.RequestIDField); ok {
			var id string
			param := strings.Join(cfg.RequestIDField, ".")
			if json.Unmarshal(raw, &id) != nil || id == "" {
				return "", false, badRequest(codeInvalidField, param, "%s must be a non-empty string: it is the request id", param)
			}
			return id, false, checkID(id, param)
		}
	}
	return derivedID(req, conv), true, nil
}

// maxDerived bounds the ids a derived id stands for: id, id-2, … id-16.
const maxDerived = 16

// derivedN is the n-th id (1-based) of derived id base: a later identical conversation
// takes the next one when an earlier one's request failed, whose id stays taken.
func derivedN(base string, n int) string {
	if n == 1 {
		return base
	}
	return base + "-" + strconv.Itoa(n)
}

// continues reports whether rec is the request the conversation continues: its first
// phase holds every tool call of the conversation's first round.
func (c *conversation) continues(rec *engine.ExecutionRecord) bool {
	steps := indexSteps(rec)[1]
	for _, call := range c.rounds[0] {
		if _, ok := steps[call.ID]; !ok {
			return false
		}
	}
	return len(c.rounds[0]) > 0
}

func checkID(id, param string) *apiError {
	if len(id) > maxRequestID || !utf8.ValidString(id) {
		return badRequest(codeInvalidField, param, "a request id is at most %d bytes of UTF-8", maxRequestID)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return badRequest(codeInvalidField, param, "a request id has no control characters")
		}
	}
	return nil
}

// lookup returns the member at path of a JSON object's members.
func lookup(fields map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	raw, ok := fields[path[0]]
	for _, key := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil, false
		}
		raw, ok = obj[key]
	}
	return raw, ok && string(raw) != "null"
}

// derivedID hashes what every round of a turn repeats: each message up to the turn's
// user message (role, text, tool calls, the call a tool result answers) and the body's
// user. Two identical conversations share an id; clients that run such conversations
// side by side send a request id instead.
func derivedID(req *chatRequest, conv *conversation) string {
	h := sha256.New()
	put := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	for _, m := range req.messages[:conv.turn+1] {
		t, _ := text(m.Content)
		put(m.Role)
		put(t)
		put(m.ToolCallID)
		for _, c := range m.ToolCalls {
			put(c.ID)
			put(c.Function.Name)
			put(c.Function.Arguments)
		}
	}
	put(req.user)
	return "oai-" + hex.EncodeToString(h.Sum(nil)[:16])
}
