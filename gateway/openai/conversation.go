package openai

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/config"
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

// requestID returns the call's request id and the token of the tool call ids the
// gateway issues for it (callID). The token is the one the ids of the turn's first
// round carry when they all carry one (the client sends back the calls it was given),
// else a fresh one. The id is the configured header, else the configured body field,
// else one derived from the tenant and the token (derivedID); the header given twice
// is refused. A new turn is a new request with a fresh id, whatever conversation it
// continues, and each later round of the turn finds it by the token in the call ids it
// answers. Two conversations that
// begin alike therefore never share a request, and the tenant's part in the id keeps
// a token sent by another tenant from naming any request of this one.
func requestID(cfg *config.OpenAIGateway, h http.Header, req *chatRequest, conv *conversation, tenant string) (id, token string, e *apiError) {
	token = conv.token()
	if token == "" {
		token = newToken()
	}
	if ids := h.Values(cfg.RequestIDHeader); len(ids) > 1 { // a proxy in front may have read another
		return "", "", badRequest(codeInvalidField, cfg.RequestIDHeader, "%s is given %d times: a request has one id", cfg.RequestIDHeader, len(ids))
	}
	if id := h.Get(cfg.RequestIDHeader); id != "" {
		return id, token, checkID(id, cfg.RequestIDHeader)
	}
	if cfg.RequestIDField != nil {
		if raw, ok := lookup(req.fields, cfg.RequestIDField); ok {
			var id string
			param := strings.Join(cfg.RequestIDField, ".")
			if json.Unmarshal(raw, &id) != nil || id == "" {
				return "", "", badRequest(codeInvalidField, param, "%s must be a non-empty string: it is the request id", param)
			}
			return id, token, checkID(id, param)
		}
	}
	return derivedID(tenant, token), token, nil
}

// tokenBytes is the size of a request token, written as twice as many hex digits.
const tokenBytes = 12

// newToken returns a fresh request token.
func newToken() string {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// validToken reports whether s has the form of a request token.
func validToken(s string) bool {
	if len(s) != 2*tokenBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// token returns the request token every tool call of the turn's first round carries,
// or "" (a new turn, or calls the gateway did not issue).
func (c *conversation) token() string {
	if c.newTurn || len(c.rounds) == 0 || len(c.rounds[0]) == 0 {
		return ""
	}
	token := tokenOf(c.rounds[0][0].ID)
	for _, call := range c.rounds[0][1:] {
		if tokenOf(call.ID) != token {
			return ""
		}
	}
	return token
}

// derivedID is the request id of token for tenant: a hash of both.
func derivedID(tenant, token string) string {
	h := sha256.New()
	h.Write([]byte("agentd openai request\x00"))
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(token))
	return "oai-" + hex.EncodeToString(h.Sum(nil)[:16])
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

// Reserved cache dimensions of a gateway turn (engine.Opening.CacheVary).
const (
	varyConversation = "openai.conversation"
	varyTenant       = "tenant"
)

// cacheVary are the reserved cache dimensions of the call's request: the tenant and a
// digest of the whole conversation the upstream is sent (every message as sent, the
// tools offered, the tool choice and the model). A response cache (cache.lookup)
// serves a turn only an answer stored by a turn with the same dimensions (docs/
// semantics.md §8.17): another conversation that ends with the same question, under
// another system prompt or other history, or another tenant's, never gets it.
func (c *chatCall) cacheVary() map[string]string {
	h := sha256.New()
	var prefix [24]byte
	put := func(b []byte) {
		h.Write(append(strconv.AppendInt(prefix[:0], int64(len(b)), 10), ':'))
		h.Write(b)
	}
	for _, m := range c.req.messages {
		put(m.raw)
	}
	for _, k := range [...]string{"tools", "tool_choice", "model"} {
		put(c.req.fields[k])
	}
	return map[string]string{varyConversation: hex.EncodeToString(h.Sum(nil)), varyTenant: c.tenant}
}
