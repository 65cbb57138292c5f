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

// allowsResource reports whether a resource URI or template passes through.
func (s *settings) allowsResource(uri string) bool {
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
