package openai

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// The members of an upstream reply besides its message (id, model,
// system_fingerprint, usage) reach the client in every answer and chunk, but no stage
// reviews them: an upstream could pass any text through them (an e-mail address that
// after_synthesis redacts from the content, say). So they are written only in the
// shape they have: the three names as identifiers, usage as its token counts.

// maxIdentifier is the longest id, model or system_fingerprint relayed as it is.
const maxIdentifier = 256

// identifier reports whether s is shaped as an identifier: 1 to maxIdentifier
// letters, digits and . _ : / + - (a model "meta-llama/Llama-3-70b", a fingerprint
// "fp_44709d6fcb").
func identifier(s string) bool {
	if s == "" || len(s) > maxIdentifier {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == ':', c == '/', c == '+', c == '-':
		default:
			return false
		}
	}
	return true
}

// vetted returns m with every member that is no identifier replaced: the id by a
// digest of it (the same for every chunk of a stream), the model and the
// system_fingerprint by nothing.
func (m chunkMeta) vetted() chunkMeta {
	if m.ID != "" && !identifier(m.ID) {
		sum := sha256.Sum256([]byte(m.ID))
		m.ID = "chatcmpl-" + hex.EncodeToString(sum[:12])
	}
	if !identifier(m.Model) {
		m.Model = ""
	}
	if !identifier(m.SystemFingerprint) {
		m.SystemFingerprint = ""
	}
	return m
}

// usageWire is what the gateway relays of an upstream's usage: the token counts.
type usageWire struct {
	PromptTokens            *int64        `json:"prompt_tokens"`
	CompletionTokens        *int64        `json:"completion_tokens"`
	TotalTokens             *int64        `json:"total_tokens"`
	PromptTokensDetails     *tokenDetails `json:"prompt_tokens_details"`
	CompletionTokensDetails *tokenDetails `json:"completion_tokens_details"`
}

type tokenDetails struct {
	CachedTokens             *int64 `json:"cached_tokens"`
	AudioTokens              *int64 `json:"audio_tokens"`
	ReasoningTokens          *int64 `json:"reasoning_tokens"`
	AcceptedPredictionTokens *int64 `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens *int64 `json:"rejected_prediction_tokens"`
}

// vetUsage returns the usage the gateway relays for an upstream's: its token counts
// (integers), written anew, nothing else of it; nil for none, null, or a usage whose
// counts are not integers.
func vetUsage(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	u, ok := decodeUsage(raw)
	if !ok {
		return nil
	}
	b := []byte{'{'}
	b = appendCount(b, "prompt_tokens", u.PromptTokens)
	b = appendCount(b, "completion_tokens", u.CompletionTokens)
	b = appendCount(b, "total_tokens", u.TotalTokens)
	b = appendDetails(b, "prompt_tokens_details", u.PromptTokensDetails)
	b = appendDetails(b, "completion_tokens_details", u.CompletionTokensDetails)
	return append(b, '}')
}

func appendDetails(b []byte, name string, d *tokenDetails) []byte {
	if d == nil {
		return b
	}
	b = appendName(b, name)
	b = append(b, '{')
	b = appendCount(b, "cached_tokens", d.CachedTokens)
	b = appendCount(b, "audio_tokens", d.AudioTokens)
	b = appendCount(b, "reasoning_tokens", d.ReasoningTokens)
	b = appendCount(b, "accepted_prediction_tokens", d.AcceptedPredictionTokens)
	b = appendCount(b, "rejected_prediction_tokens", d.RejectedPredictionTokens)
	return append(b, '}')
}

func appendCount(b []byte, name string, n *int64) []byte {
	if n == nil {
		return b
	}
	return strconv.AppendInt(appendName(b, name), *n, 10)
}

// appendName appends "name": after a comma unless b ends an object's opening.
func appendName(b []byte, name string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	return append(append(append(b, '"'), name...), `":`...)
}
