package builtin

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/internal/redirect"
)

func init() {
	register(&Spec{
		Name: "http.retrieve",
		Summary: "Fetches context from an HTTP service into an enrichment (fail open: an error, a non-2xx status or a " +
			"timeout is a hook error and the request goes on).",
		Stages: beforePlanning,
		Params: []Param{
			{Name: "url", Type: text(), Required: true, Doc: "http or https URL; the request text is sent as query parameter `q` for GET"},
			{Name: "key", Type: text(), Required: true, Doc: "enrichment key to set, e.g. `rag_context`"},
			{Name: "method", Type: enum(http.MethodGet, http.MethodPost), Default: http.MethodGet, Doc: "the HTTP method"},
			{Name: "body", Type: celExpr(expr.String), Doc: "POST body; default the request text"},
			{Name: "headers", Type: textMap(), Doc: "extra request headers"},
			{Name: "timeout", Type: duration(), Default: 2 * time.Second, Doc: "how long the whole exchange may take"},
			{Name: "max_bytes", Type: integer(1), Default: 64 << 10, Doc: "largest accepted response body"},
			{Name: "block_private", Type: boolean(), Default: false,
				Doc: "refuse to connect to loopback, private, link-local and unspecified addresses (checked on the address dialled, so a name that resolves to one is refused too)"},
		},
		Compile: compileRetrieve,
	})
}

func compileRetrieve(p *Params) Action {
	a := &retrieve{
		url:      p.String("url"),
		key:      p.String("key"),
		method:   p.Enum("method"),
		body:     p.Expr("body"),
		headers:  p.StringMap("headers"),
		timeout:  p.Duration("timeout"),
		maxBytes: int64(p.Int("max_bytes")),
	}
	u, err := url.Parse(a.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.Errorf("url", "url must be an absolute http or https URL, got %q", a.url)
		return a
	}
	a.blockPrivate = p.Bool("block_private")
	a.client = retrieveClient(p.Services().HTTP, u, a.blockPrivate)
	return a
}

// maxRedirects bounds the same-origin redirects http.retrieve follows.
const maxRedirects = 5

// retrieveClient returns the client of one http.retrieve action: base's transport and
// timeout, following at most maxRedirects redirects and only to origin (scheme, host
// and port), since a redirect elsewhere would take the configured headers and the
// user's text to a host the config never named; and, with blockPrivate, dialling only
// public addresses.
func retrieveClient(base *http.Client, origin *url.URL, blockPrivate bool) *http.Client {
	c := *base
	c.CheckRedirect = redirect.SameOrigin(origin, maxRedirects)
	if blockPrivate {
		t, ok := c.Transport.(*http.Transport)
		if c.Transport == nil || !ok {
			t = http.DefaultTransport.(*http.Transport)
		}
		t = t.Clone()
		dialer := &net.Dialer{Timeout: 5 * time.Second, Control: publicOnly}
		t.DialContext = dialer.DialContext
		t.Proxy = nil
		c.Transport = t
	}
	return &c
}

// publicOnly refuses a connection to a loopback, private, link-local, multicast or
// unspecified address; it sees the address actually dialled, after name resolution.
func publicOnly(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("refused to dial %q: not an IP address", host)
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return fmt.Errorf("refused to dial %s: not a public address (block_private)", ip)
	}
	return nil
}

type retrieve struct {
	url, key, method string
	body             *expr.Program
	headers          map[string]string
	timeout          time.Duration
	maxBytes         int64
	blockPrivate     bool
	client           *http.Client
}

func (a *retrieve) Run(ctx context.Context, s *State) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := a.request(ctx, s)
	if err != nil {
		return err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("http.retrieve: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("http.retrieve: %s answered %s", a.url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, a.maxBytes+1))
	if err != nil {
		return fmt.Errorf("http.retrieve: read body: %w", err)
	}
	if int64(len(data)) > a.maxBytes {
		return fmt.Errorf("http.retrieve: body from %s exceeds %d bytes", a.url, a.maxBytes)
	}
	s.Pctx.Enrichments[a.key] = string(data)
	return nil
}

func (a *retrieve) request(ctx context.Context, s *State) (*http.Request, error) {
	target, body := a.url, ""
	if a.method == http.MethodGet {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		target += sep + "q=" + url.QueryEscape(s.Pctx.Request)
	} else {
		body = s.Pctx.Request
		if a.body != nil {
			var err error
			if body, err = a.body.EvalString(ctx, s.Vars()); err != nil {
				return nil, fmt.Errorf("http.retrieve body: %w", err)
			}
		}
	}
	req, err := http.NewRequestWithContext(ctx, a.method, target, strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("http.retrieve: %w", err)
	}
	for k, v := range a.headers {
		req.Header.Set(k, v)
	}
	if s.Info.ID != "" {
		req.Header.Set("X-Request-Id", s.Info.ID)
	}
	return req, nil
}
