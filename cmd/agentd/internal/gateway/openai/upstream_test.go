package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
)

// The upstream timeout bounds the whole exchange: an upstream that keeps sending
// empty events is cut off at it, as one that sends nothing.
func TestUpstream_StreamTimeoutIsTotal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for r.Context().Err() == nil {
			if _, err := w.Write([]byte("data: \n\n")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond)
		}
	}))
	defer srv.Close()
	x, e := newUpstream().call(context.Background(), &config.OpenAIGateway{Upstream: srv.URL, Timeout: 100 * time.Millisecond}, http.MethodPost, "/chat/completions", []byte(`{}`), true)
	if e != nil {
		t.Fatalf("call: %+v", e)
	}
	defer x.close()
	events := x.events()
	// Without a total timeout the stream goes on: 5,000 events take at least 5s, fifty
	// times the timeout.
	for n := 0; n < 5000; n++ {
		_, ok, e := events.next()
		if e != nil {
			if e.Status != http.StatusGatewayTimeout || e.Code != codeTimeout {
				t.Fatalf("the stream ended with %+v, want 504 %s", e, codeTimeout)
			}
			return
		}
		if !ok {
			t.Fatal("the stream ended without an error")
		}
	}
	t.Fatal("5,000 empty events passed a timeout of 100ms")
}

// The key is scrubbed from an upstream's error body in every form a JSON encoder
// writes it in.
func TestUpstream_ScrubsEscapedKeys(t *testing.T) {
	const key = "sk-<live>&key"
	var all, allUpper strings.Builder
	for _, r := range key {
		all.WriteString(`\u00` + strings.ToLower(hex2(r)))
		allUpper.WriteString(`\u00` + hex2(r))
	}
	html, _ := json.Marshal(key)
	for name, form := range map[string]string{
		"plain": key, "HTML-escaped": strings.Trim(string(html), `"`), "all escaped": all.String(), "all escaped, upper case": allUpper.String(),
	} {
		x := &exchange{key: key}
		body := []byte(`{"error":{"message":"invalid key ` + form + `"}}`)
		if got := x.scrub(body); bytes.Contains(got, []byte(form)) || !bytes.Contains(got, []byte("[REDACTED]")) {
			t.Errorf("%s: scrubbed %s", name, got)
		}
	}
}

func hex2(r rune) string {
	return strings.ToUpper(string("0123456789abcdef"[r>>4]) + string("0123456789abcdef"[r&15]))
}
