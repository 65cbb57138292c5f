package config

import (
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
)

// DefaultMCPTimeout bounds one forwarded tools/call when neither the tool nor its
// server sets a timeout.
const DefaultMCPTimeout = 60 * time.Second

// MCPGateway is the compiled gateways.mcp section: the upstream servers of every
// document, in registration order.
type MCPGateway struct {
	Servers []MCPServer
}

// MCPServer is one upstream MCP server. Its Name (unique in the directory) is the
// agent_name and Namespace the namespace of its tools: the loader adds the catalog
// agent {Namespace, Name} whose capabilities are Tools, so a tool the upstream offers
// but Tools lacks fails plan validation like any unknown capability.
type MCPServer struct {
	Name      string
	Namespace string
	// Command is the argv of a stdio server, run in Dir (absolute) with exactly Env
	// plus the EnvPass variables of agentd's environment. Empty for an HTTP server.
	Command []string
	Dir     string
	Env     map[string]string
	EnvPass []string
	// URL is the endpoint of a streamable-HTTP server; HeadersEnv maps a header name
	// to the environment variable holding its value. Empty for a stdio server.
	URL        string
	HeadersEnv map[string]string
	// Timeout bounds one forwarded tools/call of a tool that sets none.
	Timeout time.Duration
	Tools   []MCPTool
	// Resources are the URI patterns passed through (`*` matches any run of
	// characters); Prompts the prompt names (`*` for all). Empty passes none.
	Resources []string
	Prompts   []string
	// MetaLabels honours the labels the server states in a tool result's
	// _meta["dev.agentd/labels"] (a list of label names), beside the config's own.
	MetaLabels bool
	File       string
	Line       int
}

// MCPTool is one tool of an upstream: a capability of its server's catalog agent.
type MCPTool struct {
	Name    string
	Returns []string
	// Timeout bounds one forwarded call; 0 means the server's.
	Timeout time.Duration
}

// ToolTimeout returns the limit of one forwarded call of tool.
func (s *MCPServer) ToolTimeout(tool string) time.Duration {
	for _, t := range s.Tools {
		if t.Name == tool && t.Timeout > 0 {
			return t.Timeout
		}
	}
	return s.Timeout
}

// Transport reports whether o connects to the same upstream the same way as s: same
// command, directory, environment, URL and headers. Tools, timeouts and the pass-through
// settings may differ without a reconnect.
func (s *MCPServer) Transport(o *MCPServer) bool {
	return slices.Equal(s.Command, o.Command) && s.Dir == o.Dir && maps.Equal(s.Env, o.Env) &&
		slices.Equal(s.EnvPass, o.EnvPass) && s.URL == o.URL && maps.Equal(s.HeadersEnv, o.HeadersEnv)
}

// mcpServerDoc is the YAML shape of one server entry; the schema has checked it.
type mcpServerDoc struct {
	Name       string            `yaml:"name"`
	Namespace  string            `yaml:"namespace"`
	Command    []string          `yaml:"command"`
	Dir        string            `yaml:"dir"`
	Env        map[string]string `yaml:"env"`
	EnvPass    []string          `yaml:"env_pass"`
	URL        string            `yaml:"url"`
	HeadersEnv map[string]string `yaml:"headers_env"`
	Timeout    string            `yaml:"timeout"`
	Tools      []struct {
		Name    string   `yaml:"name"`
		Returns []string `yaml:"returns"`
		Timeout string   `yaml:"timeout"`
	} `yaml:"tools"`
	Resources  []string `yaml:"resources"`
	Prompts    []string `yaml:"prompts"`
	MetaLabels bool     `yaml:"meta_labels"`
}

// catalogSite is a catalog agent and the node it was declared at: a catalog entry,
// or a gateway server whose tools are the agent's capabilities.
type catalogSite struct {
	agent engine.CatalogAgent
	d     document
	n     *yaml.Node
}

// compileMCPGateway compiles the gateways.mcp sections of every document into one
// gateway, and returns the catalog agents its servers declare.
func (l *loader) compileMCPGateway(dir string) (*MCPGateway, []catalogSite) {
	base, err := filepath.Abs(dir)
	if err != nil {
		base = dir
	}
	var gw *MCPGateway
	var sites []catalogSite
	seen := map[string]string{} // server name -> file:line of its first definition
	for _, d := range l.docs {
		if !d.usable("gateways") {
			continue
		}
		servers := get(get(get(d.root, "gateways"), "mcp"), "servers")
		if servers == nil {
			continue
		}
		if gw == nil {
			gw = &MCPGateway{}
		}
		for i, n := range servers.Content {
			field := "gateways.mcp.servers[" + strconv.Itoa(i) + "]"
			s, ok := l.compileMCPServer(d, n, field, base)
			if !ok {
				continue
			}
			if first, dup := seen[s.Name]; dup {
				l.errs = append(l.errs, d.src.Errorf(diag.KindInvalidValue, get(n, "name"), field+".name",
					"MCP server name %q is already used by the server at %s", s.Name, first))
				continue
			}
			seen[s.Name] = d.src.Name + ":" + strconv.Itoa(n.Line)
			gw.Servers = append(gw.Servers, s)
			sites = append(sites, catalogSite{agent: mcpAgent(&s), d: d, n: n})
		}
	}
	return gw, sites
}

func (l *loader) compileMCPServer(d document, n *yaml.Node, field, base string) (MCPServer, bool) {
	var doc mcpServerDoc
	if err := n.Decode(&doc); err != nil {
		l.errs = append(l.errs, d.src.Errorf(diag.KindSchema, n, field, "%v", err))
		return MCPServer{}, false
	}
	ok := true
	duration := func(v string, at *yaml.Node, f string) time.Duration {
		if v == "" {
			return 0
		}
		t, err := time.ParseDuration(v)
		if err != nil || t <= 0 {
			l.errs = append(l.errs, d.src.Errorf(diag.KindInvalidValue, at, f, "%s must be a positive duration like 30s, got %q", f, v))
			ok = false
		}
		return t
	}
	s := MCPServer{
		Name: doc.Name, Namespace: doc.Namespace, Command: doc.Command, Env: doc.Env, EnvPass: doc.EnvPass,
		URL: doc.URL, HeadersEnv: doc.HeadersEnv, Resources: doc.Resources, Prompts: doc.Prompts, MetaLabels: doc.MetaLabels,
		File: d.src.Name, Line: n.Line,
	}
	s.Timeout = duration(doc.Timeout, get(n, "timeout"), field+".timeout")
	if s.Timeout == 0 {
		s.Timeout = DefaultMCPTimeout
	}
	if len(s.Command) > 0 {
		s.Dir = base
		if doc.Dir != "" {
			s.Dir = filepath.Join(base, doc.Dir)
			if filepath.IsAbs(doc.Dir) {
				s.Dir = doc.Dir
			}
		}
	}
	if s.URL != "" {
		if u, err := url.Parse(s.URL); err != nil || u.Host == "" {
			l.errs = append(l.errs, d.src.Errorf(diag.KindInvalidValue, get(n, "url"), field+".url", "url must be an absolute http or https URL with a host, got %q", s.URL))
			ok = false
		}
	}
	for i, t := range doc.Tools {
		at := contentOf(get(n, "tools"))[i]
		s.Tools = append(s.Tools, MCPTool{Name: t.Name, Returns: t.Returns,
			Timeout: duration(t.Timeout, get(at, "timeout"), field+".tools["+strconv.Itoa(i)+"].timeout")})
	}
	return s, ok
}

// mcpAgent is the catalog agent of server s: its tools are the capabilities.
func mcpAgent(s *MCPServer) engine.CatalogAgent {
	a := engine.CatalogAgent{Namespace: s.Namespace, Agent: s.Name, Capabilities: []engine.Capability{}}
	for _, t := range s.Tools {
		a.Capabilities = append(a.Capabilities, engine.Capability{Name: t.Name, Returns: t.Returns})
	}
	return a
}
