// Package redirect is the redirect policy of agentd's outbound HTTP clients, which
// send secrets (API keys, bearer tokens, configured headers) a redirect must not carry
// to a host the configuration never named.
package redirect

import (
	"fmt"
	"net/http"
	"net/url"
)

// SameOrigin returns an http.Client CheckRedirect that follows at most max redirects,
// each to origin's scheme, host and port only: a redirect to another origin is an
// error, so the request (and its headers, which a RoundTripper may add to every
// request) never reaches it.
func SameOrigin(origin *url.URL, max int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= max {
			return fmt.Errorf("stopped after %d redirects", max)
		}
		if req.URL.Scheme != origin.Scheme || req.URL.Host != origin.Host {
			return fmt.Errorf("refused a redirect to another origin (%s://%s)", req.URL.Scheme, req.URL.Host)
		}
		return nil
	}
}
