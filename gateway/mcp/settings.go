package mcp

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentd-dev/agentd/config"
)

// settings are an upstream's configuration, with its resource patterns compiled once.
type settings struct {
	*config.MCPServer
	uris []*regexp.Regexp
}

// newSettings compiles the resource patterns of s: `*` matches any run of characters,
// '/' included; every other character matches itself.
func newSettings(s *config.MCPServer) *settings {
	out := &settings{MCPServer: s, uris: make([]*regexp.Regexp, len(s.Resources))}
	for i, p := range s.Resources {
		parts := strings.Split(p, "*")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		out.uris[i] = regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
	}
	return out
}

// allowsResource reports whether a resource URI or template passes through: it must
// be in normal form (ambiguousURI) and match one of the patterns as it is.
func (s *settings) allowsResource(uri string) bool {
	if ambiguousURI(uri) {
		return false
	}
	for _, p := range s.uris {
		if p.MatchString(uri) {
			return true
		}
	}
	return false
}

// allowsPrompt reports whether a prompt passes through.
func (s *settings) allowsPrompt(name string) bool {
	return slices.Contains(s.Prompts, "*") || slices.Contains(s.Prompts, name)
}

// ambiguousURI reports whether uri could name, once an upstream resolves it, another
// resource than its text shows, so that a pattern matched on the text says nothing.
// It reads uri as it is and after each percent-decoding, until one changes nothing,
// as an upstream that decodes any number of times would: any of them with a backslash,
// another number of slashes than uri (an encoded separator), a control character (a
// NUL ends a path in C), a percent-encoded dot (%2e, any case) or a dot segment in its
// path ("." or "..", between slashes or at the end, also before a ";parameter") makes
// it ambiguous. Such a URI is refused, not normalized: the upstream reads it its own
// way.
func ambiguousURI(uri string) bool {
	slashes := strings.Count(uri, "/")
	for d := uri; ; {
		if strings.ContainsRune(d, '\\') || strings.Count(d, "/") != slashes || strings.Contains(strings.ToLower(d), "%2e") ||
			strings.ContainsFunc(d, func(r rune) bool { return r < 0x20 || r == 0x7f }) || dotSegment(d) {
			return true
		}
		next := percentDecode(d)
		if next == d {
			return false
		}
		d = next
	}
}

// dotSegment reports whether the path of uri (after "scheme://", before a query or a
// fragment) has a "." or ".." segment, with or without a ";parameter".
func dotSegment(uri string) bool {
	if _, rest, ok := strings.Cut(uri, "://"); ok {
		uri = rest
	}
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		uri = uri[:i]
	}
	for _, seg := range strings.Split(uri, "/") {
		if seg, _, _ = strings.Cut(seg, ";"); seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// percentDecode decodes each well-formed %XX of s once, keeping what is not one.
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if hi, lo := unhex(s[i+1]), unhex(s[i+2]); hi >= 0 && lo >= 0 {
				b = append(b, byte(hi<<4|lo))
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// unhex is the value of the hex digit c, -1 when c is none.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
