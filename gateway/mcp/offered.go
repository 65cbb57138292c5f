package mcp

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// route is where something the server offers goes: the upstream, the item as the
// upstream lists it, and the name or URI it is offered under.
type route[T comparable] struct {
	up     *upstream
	item   T
	listed string
}

// toolRoute is the route of a listed tool.
type toolRoute = route[*mcp.Tool]

// offered is what the server offers, by listed name or URI.
type offered struct {
	tools     map[string]route[*mcp.Tool]
	prompts   map[string]route[*mcp.Prompt]
	resources map[string]route[*mcp.Resource]
	templates map[string]route[*mcp.ResourceTemplate]
}

// refresh makes the server offer what the upstreams offer now, as the package doc
// says (names, pass-through settings), adding what is new or changed and removing what
// went; the SDK then notifies every session of each list that changed. With all set,
// every tool is added again, so every session hears that the tool list may have
// changed (a new generation may review them differently).
func (g *Gateway) refresh(all bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	next := offered{tools: map[string]toolRoute{}, prompts: map[string]route[*mcp.Prompt]{},
		resources: map[string]route[*mcp.Resource]{}, templates: map[string]route[*mcp.ResourceTemplate]{}}
	var toolOffers, promptOffers []offer
	tools, prompts := map[offer]toolRoute{}, map[offer]route[*mcp.Prompt]{}
	for _, u := range g.upstreams {
		f, s := u.offers(), u.settings()
		for _, t := range f.tools {
			o := offer{u.name, t.Name}
			toolOffers, tools[o] = append(toolOffers, o), toolRoute{up: u, item: t}
		}
		for _, p := range f.prompts {
			if s.allowsPrompt(p.Name) {
				o := offer{u.name, p.Name}
				promptOffers, prompts[o] = append(promptOffers, o), route[*mcp.Prompt]{up: u, item: p}
			}
		}
		for _, r := range f.resources {
			if _, taken := next.resources[r.URI]; !taken && s.allowsResource(r.URI) {
				next.resources[r.URI] = route[*mcp.Resource]{up: u, item: r, listed: r.URI}
			}
		}
		for _, t := range f.templates {
			if _, taken := next.templates[t.URITemplate]; !taken && s.allowsResource(t.URITemplate) {
				next.templates[t.URITemplate] = route[*mcp.ResourceTemplate]{up: u, item: t, listed: t.URITemplate}
			}
		}
	}
	name(next.tools, tools, toolOffers, g)
	name(next.prompts, prompts, promptOffers, g)

	apply(next.tools, g.offered.tools, all, g.addTool)
	apply(next.prompts, g.offered.prompts, false, g.addPrompt)
	apply(next.resources, g.offered.resources, false, g.addResource)
	apply(next.templates, g.offered.templates, false, g.addTemplate)
	g.server.RemoveTools(gone(g.offered.tools, next.tools)...)
	g.server.RemovePrompts(gone(g.offered.prompts, next.prompts)...)
	g.server.RemoveResources(gone(g.offered.resources, next.resources)...)
	g.server.RemoveResourceTemplates(gone(g.offered.templates, next.templates)...)
	g.offered = next
	g.tools.Store(&next.tools)
}

// name fills into the routes of offers under their listed names (see listedNames) and
// logs the offers a collision leaves out.
func name[T comparable](into map[string]route[T], routes map[offer]route[T], offers []offer, g *Gateway) {
	listed, dropped := listedNames(offers)
	for n, o := range listed {
		r := routes[o]
		r.listed = n
		into[n] = r
	}
	for _, o := range dropped {
		g.log.Warn("an MCP upstream's name collides with another listed name; it is not offered", "server", o.server, "name", o.name)
	}
}

// apply adds each route of next that is new or changed since old (every route with
// all); a route add refuses is dropped from next.
func apply[T comparable](next, old map[string]route[T], all bool, add func(route[T]) error) {
	for n, r := range next {
		if prev, ok := old[n]; ok && !all && prev.up == r.up && prev.item == r.item {
			continue
		}
		if err := add(r); err != nil {
			delete(next, n)
			r.up.g.log.Warn("an MCP upstream's offer cannot be passed on", "server", r.up.name, "name", n, "error", err.Error())
		}
	}
}

// gone returns the keys of old that next lacks, sorted.
func gone[V any](old, next map[string]V) []string {
	var out []string
	for k := range old {
		if _, ok := next[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// recovered runs add, which the SDK makes panic on an offer it cannot serve (a tool
// whose input schema is not an object schema, an invalid URI), and returns the panic
// as an error.
func recovered(add func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	add()
	return nil
}

func (g *Gateway) addTool(r toolRoute) error {
	t := *r.item
	t.Name = r.listed
	return recovered(func() { g.server.AddTool(&t, g.callTool) })
}

// addPrompt offers r's prompt; getting it asks the upstream for it by its own name, if
// the upstream's prompts setting still allows it.
func (g *Gateway) addPrompt(r route[*mcp.Prompt]) error {
	p := *r.item
	p.Name = r.listed
	return recovered(func() {
		g.server.AddPrompt(&p, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			cs := r.up.current()
			if cs == nil || !r.up.settings().allowsPrompt(r.item.Name) {
				return nil, fmt.Errorf("prompt %q is not available", r.listed)
			}
			params := *req.Params
			params.Name = r.item.Name
			return cs.GetPrompt(ctx, &params)
		})
	})
}

func (g *Gateway) addResource(r route[*mcp.Resource]) error {
	return recovered(func() { g.server.AddResource(r.item, readFrom(r.up)) })
}

func (g *Gateway) addTemplate(r route[*mcp.ResourceTemplate]) error {
	return recovered(func() { g.server.AddResourceTemplate(r.item, readFrom(r.up)) })
}

// readFrom reads a resource from u, if u's resources setting still allows its URI;
// otherwise the resource is not found.
func readFrom(u *upstream) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		cs := u.current()
		if cs == nil || !u.settings().allowsResource(req.Params.URI) {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		return cs.ReadResource(ctx, req.Params)
	}
}
