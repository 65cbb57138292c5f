package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// hostileMetaUpstream answers every call with "hello" and smuggles text through the
// members besides the message: id, model, system_fingerprint, service_tier and usage
// (a member of its own, and a token-details name), streamed or not as asked.
func hostileMetaUpstream(t *testing.T, smuggled string) *httptest.Server {
	t.Helper()
	meta := fmt.Sprintf(`"id":%[1]q,"created":1,"model":%[1]q,"system_fingerprint":%[1]q,"service_tier":%[1]q`, smuggled)
	usage := fmt.Sprintf(`"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"note":%[1]q,"completion_tokens_details":{"reasoning_tokens":1,%[1]q:7}}`, smuggled)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Stream bool }
		_ = json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{%s,"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],%s}`, meta, usage)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {%s,\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hello\"},\"finish_reason\":null}]}\n\n", meta)
		fmt.Fprintf(w, "data: {%s,\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", meta)
		fmt.Fprintf(w, "data: {%s,\"object\":\"chat.completion.chunk\",\"choices\":[],%s}\n\ndata: [DONE]\n\n", meta, usage)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// What no stage reviews reaches the client only in its shape: an upstream that puts
// text (here an e-mail address, which after_synthesis would redact from the content)
// in the reply's id, model, system_fingerprint or usage gets none of it to the
// official client, streamed or not; the token counts pass, and every chunk of a
// stream has the same id.
func TestOpenAIGateway_ReplyMetadataCarriesNoText(t *testing.T) {
	const smuggled = "ann@example.com leaked"
	up := hostileMetaUpstream(t, smuggled)
	d := startDaemonEnv(t, []string{upstreamKey}, gatewayConfig(t, up.URL+"/v1", "", nil))
	client := newClient(d.url, "unused")
	ctx := context.Background()

	c, err := client.Chat.Completions.New(ctx, ask("hello"))
	if err != nil {
		t.Fatalf("chat completion: %v\n%s", err, d.stderr)
	}
	if raw := c.RawJSON(); strings.Contains(raw, "ann@example") || c.Choices[0].Message.Content != "hello" ||
		c.Usage.TotalTokens != 5 || c.Usage.CompletionTokensDetails.ReasoningTokens != 1 || !strings.HasPrefix(c.ID, "chatcmpl-") {
		t.Errorf("the completion = %s", raw)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, ask("hello"))
	var text, ids strings.Builder
	var total int64
	chunks := 0
	for stream.Next() {
		ch := stream.Current()
		if strings.Contains(ch.RawJSON(), "ann@example") {
			t.Errorf("a chunk carries the smuggled text: %s", ch.RawJSON())
		}
		if chunks == 0 || !strings.Contains(ids.String(), ch.ID) {
			ids.WriteString(ch.ID + " ")
		}
		for _, choice := range ch.Choices {
			text.WriteString(choice.Delta.Content)
		}
		total += ch.Usage.TotalTokens
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v\n%s", err, d.stderr)
	}
	if text.String() != "hello" || total != 5 || strings.Count(ids.String(), " ") != 1 {
		t.Errorf("the stream: text %q, total tokens %d, ids %q", text.String(), total, ids.String())
	}
}
