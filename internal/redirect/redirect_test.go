package redirect

import (
	"net/http"
	"net/url"
	"testing"
)

func TestSameOrigin(t *testing.T) {
	origin, _ := url.Parse("https://mcp.example:8443/mcp")
	check := SameOrigin(origin, 2)
	via := func(n int) []*http.Request { return make([]*http.Request, n) }
	for _, tc := range []struct {
		to   string
		hops int
		ok   bool
	}{
		{"https://mcp.example:8443/mcp/", 0, true},
		{"https://mcp.example:8443/other?x=1", 1, true},
		{"https://mcp.example:8443/mcp", 2, false}, // past max
		{"http://mcp.example:8443/mcp", 0, false},  // another scheme
		{"https://mcp.example/mcp", 0, false},      // another port
		{"https://evil.example:8443/mcp", 0, false},
		{"https://sub.mcp.example:8443/mcp", 0, false}, // a subdomain is another origin
	} {
		req, _ := http.NewRequest(http.MethodGet, tc.to, nil)
		if err := check(req, via(tc.hops)); (err == nil) != tc.ok {
			t.Errorf("redirect to %s after %d hops: %v, want allowed %v", tc.to, tc.hops, err, tc.ok)
		}
	}
}
