package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine/jsonread"
)

// Bounds on what the gateway reads from the upstream.
const (
	// maxReplyBytes bounds a reply: a non-streamed body, an SSE event, or the text of a
	// streamed reply the gateway holds.
	maxReplyBytes = 8 << 20
	// maxErrorBytes bounds an upstream error body passed through to the client.
	maxErrorBytes = 1 << 20
)

// errTimeout is the cause of a call the upstream kept waiting past the timeout.
var errTimeout = errors.New("upstream timeout")

// errClientGone reports that the client went away; nothing can be answered.
var errClientGone = &apiError{Status: 499, Type: typeInvalidRequest, Code: "client_closed", Message: "the client closed the request"}

// upstream calls the configured OpenAI-compatible server over one pool of keep-alive
// connections. It is safe for concurrent use.
type upstream struct {
	client *http.Client
}

func newUpstream() *upstream {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &upstream{client: &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// exchange is one upstream call in flight. Its watchdog cancels the call when the whole
// exchange outlasts the timeout: the response headers and the body, streamed or not,
// share one deadline (an upstream that keeps sending events, empty or not, cannot hold
// a call open past it).
type exchange struct {
	resp    *http.Response
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	timeout time.Duration
	key     string
}

// call sends one request to path under the upstream base URL with the configured key.
// A 2xx answer returns the exchange, which the caller must close; anything else is an
// OpenAI-shaped error: a non-2xx answer passed through with its body (the key scrubbed
// from it), an unreachable upstream a 502, a silent one a 504.
func (u *upstream) call(ctx context.Context, cfg *config.OpenAIGateway, method, path string, body []byte, stream bool) (*exchange, *apiError) {
	x := &exchange{parent: ctx, timeout: cfg.Timeout}
	if cfg.APIKeyEnv != "" {
		if x.key = os.Getenv(cfg.APIKeyEnv); x.key == "" {
			return nil, newError(http.StatusInternalServerError, typeServer, codeMisconfigured,
				"the environment variable %s named by gateways.openai.api_key_env is not set", cfg.APIKeyEnv)
		}
	}
	x.ctx, x.cancel = context.WithCancelCause(ctx)
	x.timer = time.AfterFunc(cfg.Timeout, func() { x.cancel(errTimeout) })
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(x.ctx, method, cfg.Upstream+path, r)
	if err != nil {
		x.close()
		return nil, newError(http.StatusInternalServerError, typeServer, codeMisconfigured, "upstream request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	if x.key != "" {
		req.Header.Set("Authorization", "Bearer "+x.key)
	}
	x.resp, err = u.client.Do(req)
	if err != nil {
		x.close()
		return nil, x.failure(err)
	}
	if x.resp.StatusCode/100 != 2 {
		defer x.close()
		data, err := io.ReadAll(io.LimitReader(x.resp.Body, maxErrorBytes))
		if err != nil {
			return nil, x.failure(err)
		}
		if x.resp.StatusCode/100 == 3 {
			return nil, newError(http.StatusBadGateway, typeUpstream, codeMalformed, "upstream answered %s (redirects are not followed)", x.resp.Status)
		}
		return nil, x.errorBody(data)
	}
	return x, nil
}

// errorBody is the answer to an upstream's error response: its status, and its body
// when that is JSON, passed through with the key scrubbed from every string in it
// (scrubJSON); any other body (an HTML error page) is not passed through, the gateway
// says what it was instead.
func (x *exchange) errorBody(data []byte) *apiError {
	e := &apiError{Status: x.resp.StatusCode, Type: typeUpstream, Code: codeUpstreamError, Message: "upstream answered " + x.resp.Status}
	if body, ok := x.scrubJSON(data); ok {
		e.raw = body
		return e
	}
	if len(data) > 0 {
		e.Message += fmt.Sprintf(" (a body of %d bytes that is not JSON, not passed through)", len(data))
	}
	return e
}

// failure classifies a transport error: the client gone, the upstream silent past the
// timeout (504), unreachable (502, before its answer began) or cut off (a malformed
// reply, 502).
func (x *exchange) failure(err error) *apiError {
	switch {
	case x.parent.Err() != nil:
		return errClientGone
	case errors.Is(context.Cause(x.ctx), errTimeout):
		return newError(http.StatusGatewayTimeout, typeUpstream, codeTimeout, "the upstream did not answer within %v", x.timeout)
	case x.resp != nil:
		return malformed("the reply was cut off: %s", x.scrub([]byte(err.Error())))
	}
	return newError(http.StatusBadGateway, typeUpstream, codeUnreachable, "the upstream is unreachable: %s", x.scrub([]byte(err.Error())))
}

// redacted replaces the upstream key wherever it is scrubbed.
const redacted = "[REDACTED]"

// scrub removes the upstream key from text the client or a log may see: as it is,
// and in each form a JSON encoder may have escaped it to (see keyForms).
func (x *exchange) scrub(data []byte) []byte {
	if x.key == "" {
		return data
	}
	for _, form := range keyForms(x.key) {
		data = bytes.ReplaceAll(data, form, []byte(redacted))
	}
	return data
}

// scrubJSON returns data, a JSON value, with the upstream key removed from every string
// and member name in it, however the text escapes it (the value is decoded, scrubbed
// and encoded again when any string holds the key); ok is false when data is not one
// JSON value.
func (x *exchange) scrubJSON(data []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || jsonread.Trailing(data, dec.InputOffset()) >= 0 {
		return nil, false
	}
	if x.key == "" {
		return data, true
	}
	v, changed := scrubValue(v, x.key)
	if !changed {
		return data, true
	}
	out, err := json.Marshal(v)
	return out, err == nil
}

// scrubValue replaces key in every string and member name of v, a decoded JSON value.
func scrubValue(v any, key string) (any, bool) {
	switch v := v.(type) {
	case string:
		if strings.Contains(v, key) {
			return strings.ReplaceAll(v, key, redacted), true
		}
	case []any:
		changed := false
		for i, x := range v {
			var c bool
			v[i], c = scrubValue(x, key)
			changed = changed || c
		}
		return v, changed
	case map[string]any:
		changed := false
		for k, x := range v {
			x, c := scrubValue(x, key)
			if nk := strings.ReplaceAll(k, key, redacted); nk != k {
				delete(v, k)
				k, c = nk, true
			}
			v[k] = x
			changed = changed || c
		}
		return v, changed
	}
	return v, false
}

// keyForms are the forms key may take in an upstream's text: itself, its JSON string
// encodings with and without HTML escaping (Go's encoder writes <, > and & as \u003c,
// \u003e, \u0026), and with every character \u-escaped (in lower and upper case hex),
// as a JSON encoder that escapes all of them writes it. A key that differs from the
// text but decodes alike is the same secret.
func keyForms(key string) [][]byte {
	forms := [][]byte{[]byte(key)}
	add := func(f []byte) {
		for _, have := range forms {
			if bytes.Equal(have, f) {
				return
			}
		}
		forms = append(forms, f)
	}
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(key)
	add(bytes.Trim(bytes.TrimSpace(plain.Bytes()), `"`))
	html, _ := json.Marshal(key)
	add(bytes.Trim(html, `"`))
	for _, digits := range []string{"%04x", "%04X"} {
		var all []byte
		for _, r := range key {
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				all = fmt.Appendf(all, `\u`+digits+`\u`+digits, hi, lo)
				continue
			}
			all = fmt.Appendf(all, `\u`+digits, r)
		}
		add(all)
	}
	return forms
}

// readAll reads the whole body, at most maxReplyBytes.
func (x *exchange) readAll() ([]byte, *apiError) {
	data, err := readUpTo(x.resp.Body, x.resp.ContentLength, maxReplyBytes)
	if err != nil {
		return nil, x.failure(err)
	}
	if len(data) > maxReplyBytes {
		return nil, malformed("the reply exceeds %d bytes", maxReplyBytes)
	}
	return data, nil
}

// readUpTo reads r to its end, or to limit+1 bytes when it is longer, into one buffer
// when size, the length r announced (-1: none), is within limit.
func readUpTo(r io.Reader, size, limit int64) ([]byte, error) {
	r = io.LimitReader(r, limit+1)
	if size < 0 || size > limit {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, size+1) // the byte past size: room to read the end
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case len(b) == cap(b):
			b = append(b, 0)[:len(b)]
		}
	}
}

func (x *exchange) close() {
	x.timer.Stop()
	if x.resp != nil {
		x.resp.Body.Close()
	}
	x.cancel(nil)
}

// events reads a text/event-stream body under the exchange's one deadline.
func (x *exchange) events() *sseReader {
	return &sseReader{x: x, r: bufio.NewReaderSize(x.resp.Body, 32<<10)}
}

// sseReader reads the data of server-sent events.
type sseReader struct {
	x    *exchange
	r    *bufio.Reader
	data []byte
}

// next returns the data of the next event; ok is false at the end of the body. An event
// over maxReplyBytes is malformed. The data is valid until the next call.
func (s *sseReader) next() (data []byte, ok bool, e *apiError) {
	s.data = s.data[:0]
	have := false
	for {
		line, err := s.line()
		switch {
		case errors.Is(err, io.EOF):
			return s.data, have, nil
		case err != nil:
			if ae, isAPI := err.(*apiError); isAPI {
				return nil, false, ae
			}
			return nil, false, s.x.failure(err)
		case len(line) == 0 && have:
			return s.data, true, nil
		case bytes.HasPrefix(line, []byte("data:")):
			if have {
				s.data = append(s.data, '\n')
			}
			s.data, have = append(s.data, bytes.TrimPrefix(line[5:], []byte(" "))...), true
			if len(s.data) > maxReplyBytes {
				return nil, false, malformed("an event exceeds %d bytes", maxReplyBytes)
			}
		}
	}
}

// line reads one line without its end, bounded by maxReplyBytes; io.EOF when the body
// is over.
func (s *sseReader) line() ([]byte, error) {
	var long []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if long = append(long, chunk...); len(long) > maxReplyBytes {
				return nil, malformed("an event line exceeds %d bytes", maxReplyBytes)
			}
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return nil, err
		}
		if long != nil {
			chunk = append(long, chunk...)
		}
		if len(chunk) == 0 && err != nil {
			return nil, io.EOF
		}
		return bytes.TrimRight(chunk, "\r\n"), nil
	}
}

func malformed(format string, args ...any) *apiError {
	return newError(http.StatusBadGateway, typeUpstream, codeMalformed, "malformed upstream reply: "+format, args...)
}
