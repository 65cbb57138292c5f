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
// resource than its text shows, so that a pattern matched on the text says nothing:
// a dot segment ("." or "..", between slashes or at the end), a backslash, or a
// percent-encoded dot, slash or backslash (%2e, %2f, %5c, any case), which decode to
// one. Such a URI is refused, not normalized: the upstream reads it its own way.
func ambiguousURI(uri string) bool {
	lower := strings.ToLower(uri)
	if strings.ContainsRune(uri, '\\') || strings.Contains(lower, "%2e") || strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") {
		return true
	}
	if _, rest, ok := strings.Cut(uri, "://"); ok {
		uri = rest
	}
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		uri = uri[:i]
	}
	for _, seg := range strings.Split(uri, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}
