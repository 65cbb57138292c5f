package server

import (
	"github.com/agentd-dev/agentd/api"

	"mime"
	"net"
	"net/http"
	"strings"
)

// browserBoundary refuses, on every route (the API, the gateways, the viewer, /healthz
// and /readyz alike), what a web page in a browser could make the browser send to
// agentd, so that agentd with no --token-file on loopback is no open door to every
// site its user visits:
//
//   - DNS rebinding: a call that reached agentd at a loopback address must name a
//     loopback host in its Host header ("localhost", a name under ".localhost", or a
//     loopback IP), or one of allowed (--allowed-hosts); anything else is answered 421
//     host_forbidden. A page of another site that rebinds its name to 127.0.0.1 sends
//     its own name.
//   - Cross-site writes: a call with any method but GET, HEAD and OPTIONS whose
//     Sec-Fetch-Site is not same-origin or none, or whose Origin's host is not its
//     Host, is answered 403 cross_origin (net/http's CrossOriginProtection).
//   - Simple requests: a POST, PUT or PATCH must declare Content-Type
//     application/json, which a form or a fetch without preflight cannot send; a form
//     (urlencoded, multipart) or text/plain body is answered 415
//     unsupported_media_type before it is read. So is a body under any
//     Content-Encoding but identity: agentd reads bodies as they come, and a proxy that
//     decoded one would have inspected another body than agentd reads.
//
// Calls from programs (no Origin, no Sec-Fetch-Site, a JSON body) pass unchanged.
func browserBoundary(allowed []string, next http.Handler) http.Handler {
	hosts := make(map[string]bool, len(allowed))
	for _, h := range allowed {
		hosts[strings.ToLower(h)] = true
	}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, api.Errorf(http.StatusForbidden, api.TypeCrossOrigin, "%s %s: a cross-origin call from a browser is refused", r.Method, r.URL.Path))
	}))
	checked := cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bodyMethod(r.Method) {
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
				writeError(w, api.Errorf(http.StatusUnsupportedMediaType, api.TypeUnsupportedMediaType,
					"%s %s: the body must be JSON (Content-Type: application/json), not %q", r.Method, r.URL.Path, r.Header.Get("Content-Type")))
				return
			}
			if ce := r.Header.Values("Content-Encoding"); len(ce) > 0 && (len(ce) > 1 || !strings.EqualFold(strings.TrimSpace(ce[0]), "identity")) {
				writeError(w, api.Errorf(http.StatusUnsupportedMediaType, api.TypeUnsupportedMediaType,
					"%s %s: the body must not be encoded (Content-Encoding %q)", r.Method, r.URL.Path, strings.Join(ce, ", ")))
				return
			}
		}
		next.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if atLoopback(r) && !loopbackHost(r.Host) && !hosts[strings.ToLower(hostOnly(r.Host))] {
			writeError(w, api.Errorf(http.StatusForbidden, api.TypeHostForbidden,
				"Host %q is not a loopback name: agentd listening on loopback answers only localhost and the hosts --allowed-hosts lists", r.Host))
			return
		}
		checked.ServeHTTP(w, r)
	})
}

// bodyMethod reports whether a request of method carries a body that changes state.
// DELETE carries none here; a browser cannot send one cross-site without a preflight
// agentd never answers.
func bodyMethod(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// atLoopback reports whether r reached the server at a loopback address.
func atLoopback(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether hostport (a Host header) names a loopback host:
// localhost, a name under .localhost (RFC 6761), or a loopback IP.
func loopbackHost(hostport string) bool {
	h := strings.ToLower(strings.TrimSuffix(hostOnly(hostport), "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// hostOnly is the host of a Host header, without its port and an IPv6 literal's
// brackets.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}
