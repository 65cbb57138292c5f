package config

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
)

// OnReject is what the OpenAI gateway answers when nothing of a round of tool calls
// may reach the client.
type OnReject string

// Rejection answers.
const (
	// RejectRefuse answers with an assistant message (finish_reason stop): the
	// gateway's RefusalMessage, which names no hook, tenant or policy text.
	RejectRefuse OnReject = "refuse"
	// RejectError answers with an OpenAI-shaped 403 error.
	RejectError OnReject = "error"
)

// Defaults of gateways.openai.
const (
	DefaultRequestIDHeader = "X-Request-Id"
	DefaultUpstreamTimeout = 120 * time.Second
	// DefaultRefusalMessage is the refusal an end user reads under on_reject: refuse.
	DefaultRefusalMessage = "I can't do that: {reason}. (decision {decision_id})"
)

// refusalPlaceholders are what a refusal_message may say: the decision id of the
// round's review (the record and the decision log hold the details under it) and a
// generic reason naming no hook, tenant or policy text.
var refusalPlaceholders = []string{"{decision_id}", "{reason}"}

// ToolIdentity is the catalog identity a tool function's calls are reviewed and
// guarded as.
type ToolIdentity struct {
	Namespace  string `json:"namespace"`
	Agent      string `json:"agent"`
	Capability string `json:"capability"`
}

// OpenAIGateway is the compiled gateways.openai section. It is immutable; the key named
// by APIKeyEnv is read by the gateway when it calls the upstream, never stored here.
type OpenAIGateway struct {
	// Upstream is the base URL of the OpenAI-compatible server, without a trailing slash.
	Upstream  string
	APIKeyEnv string
	// RequestIDHeader is where a request id is read from and returned in.
	RequestIDHeader string
	// RequestIDField is the path of a string body field holding the request id; nil
	// when not configured.
	RequestIDField []string
	OnReject       OnReject
	// RefusalMessage is the on_reject: refuse answer, with {decision_id} and {reason}
	// in it (see Refusal).
	RefusalMessage string
	Timeout        time.Duration
	tools          map[string]ToolIdentity
	names          []string // the tool names, sorted
}

// Refusal is the refusal message with decisionID and reason in place of its
// placeholders.
func (g *OpenAIGateway) Refusal(decisionID, reason string) string {
	return strings.NewReplacer("{decision_id}", decisionID, "{reason}", reason).Replace(g.RefusalMessage)
}

// Tool returns the identity a tool function name maps to; false for an unmapped tool,
// whose calls are denied.
func (g *OpenAIGateway) Tool(name string) (ToolIdentity, bool) {
	id, ok := g.tools[name]
	return id, ok
}

// ToolFor returns the first tool name, in sorted order, that maps to id.
func (g *OpenAIGateway) ToolFor(id ToolIdentity) (string, bool) {
	for _, name := range g.names {
		if g.tools[name] == id {
			return name, true
		}
	}
	return "", false
}

// Tools returns the mapped tool names, sorted.
func (g *OpenAIGateway) Tools() []string { return slices.Clone(g.names) }

// compileOpenAIGateway compiles the one gateways.openai section of the directory, nil
// when there is none. Every mapped identity must be in the catalog when there is one.
func (l *loader) compileOpenAIGateway(catalog *engine.Catalog) *OpenAIGateway {
	var gw *OpenAIGateway
	var from document
	for _, d := range l.docs {
		gateways := get(d.root, "gateways")
		if gateways == nil || !d.usable("gateways") {
			continue
		}
		n, key := child(gateways, "openai")
		if n == nil {
			continue
		}
		if gw != nil {
			l.errs = append(l.errs, d.src.Errorf(diag.KindGateway, key, "gateways.openai", "gateways.openai is already configured in %s", from.src.Name))
			continue
		}
		gw, from = l.openAIGateway(d, n, catalog), d
	}
	return gw
}

func (l *loader) openAIGateway(d document, n *yaml.Node, catalog *engine.Catalog) *OpenAIGateway {
	const field = "gateways.openai"
	bad := func(kind diag.Kind, at *yaml.Node, sub, format string, args ...any) {
		l.errs = append(l.errs, d.src.Errorf(kind, at, joinField(field, sub), format, args...))
	}
	gw := &OpenAIGateway{
		APIKeyEnv: scalar(get(n, "api_key_env")), RequestIDHeader: DefaultRequestIDHeader,
		OnReject: RejectRefuse, RefusalMessage: DefaultRefusalMessage, Timeout: DefaultUpstreamTimeout, tools: map[string]ToolIdentity{},
	}
	up := get(n, "upstream")
	if u, err := url.Parse(up.Value); err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		bad(diag.KindInvalidValue, up, "upstream", "upstream must be an http(s) base URL with a host and no query, fragment or credentials, got %q", up.Value)
	}
	gw.Upstream = strings.TrimRight(up.Value, "/")
	if h := get(n, "request_id_header"); h != nil {
		gw.RequestIDHeader = h.Value
	}
	if f := get(n, "request_id_field"); f != nil {
		gw.RequestIDField = strings.Split(f.Value, ".")
	}
	if r := get(n, "on_reject"); r != nil {
		gw.OnReject = OnReject(r.Value)
	}
	if m := get(n, "refusal_message"); m != nil {
		gw.RefusalMessage = m.Value
		rest := strings.NewReplacer("{decision_id}", "", "{reason}", "").Replace(m.Value)
		if i := strings.IndexByte(rest, '{'); i >= 0 && strings.IndexByte(rest[i:], '}') > 0 {
			bad(diag.KindInvalidValue, m, "refusal_message", "refusal_message may name only %s, got %q", strings.Join(refusalPlaceholders, " and "), m.Value)
		}
	}
	if t := get(n, "timeout"); t != nil {
		dur, err := time.ParseDuration(t.Value)
		if err != nil || dur <= 0 {
			bad(diag.KindInvalidValue, t, "timeout", "timeout must be a positive duration like 30s, got %q", t.Value)
		}
		gw.Timeout = dur
	}
	tools := get(n, "tools")
	for i := 0; i+1 < len(contentOf(tools)); i += 2 {
		k, v := tools.Content[i], tools.Content[i+1]
		id := ToolIdentity{Namespace: scalar(get(v, "namespace")), Agent: scalar(get(v, "agent")), Capability: scalar(get(v, "capability"))}
		if catalog != nil && !catalogHas(catalog, id) {
			bad(diag.KindGateway, v, "tools."+k.Value, "tool %q maps to %s/%s capability %q, which the catalog does not have",
				k.Value, id.Namespace, id.Agent, id.Capability)
		}
		gw.tools[k.Value] = id
		gw.names = append(gw.names, k.Value)
	}
	slices.Sort(gw.names)
	return gw
}

// catalogHas reports whether a plan step with identity id passes plan validation's
// catalog rules, as every step of the gateway's plans must.
func catalogHas(catalog *engine.Catalog, id ToolIdentity) bool {
	step := engine.RoutingStep{StepID: "step-1", Namespace: id.Namespace, AgentName: id.Agent, Metadata: map[string]any{"capability": id.Capability}}
	return engine.ValidatePlan(&engine.RoutingPlan{Steps: []engine.RoutingStep{step}}, catalog, nil) == nil
}
