package mcp

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/engine"
)

// review is the server's receiving middleware: it narrows each tools/list page to the
// tools the session could call, and answers a tools/call of a name no upstream offers
// (as a refusal, where the SDK would answer a protocol error). Every other method goes
// to the server as it is.
func (g *Gateway) review(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			page := res.(*mcp.ListToolsResult)
			tools, err := g.callable(ctx, g.sessionOf(r.Session, r.ClientInfo()), page.Tools)
			if err != nil {
				return nil, err
			}
			out := *page
			out.Tools = tools
			return &out, nil
		case *mcp.CallToolRequest:
			if _, ok := (*g.tools.Load())[r.Params.Name]; !ok {
				return g.callTool(ctx, r)
			}
		}
		return next(ctx, method, req)
	}
}

// callable returns the tools of listed that a one-step plan of the session's next call
// could use now: Session.Evaluate accepts the plan with the step unchanged in namespace,
// agent and capability. The session's request is not opened or changed. A request
// that takes no more calls (it failed, or its generation is gone) lists nothing; any
// other refusal (no live generation, the store unreachable) fails the listing, since
// nothing is listed that was not reviewed.
func (g *Gateway) callable(ctx context.Context, s *session, listed []*mcp.Tool) (out []*mcp.Tool, err error) {
	ctx = s.confine(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := g.cfg.Driver.Resume(ctx, engine.StageAfterPlanning, s.id, s.opening)
	if r, ok := engine.AsRefusal(err); ok && r.Code.Final() {
		return []*mcp.Tool{}, nil // the request takes no more calls
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "agentd cannot review tools now: " + refusalOf(err).Reason}
	}
	routes := *g.tools.Load()
	out = []*mcp.Tool{}
	for _, t := range listed {
		r, ok := routes[t.Name]
		if ok && g.wouldPass(ctx, s, sess, r) {
			out = append(out, t)
		}
	}
	return out, nil
}

// wouldPass previews the one-step plan of a call of r; a hook panic counts as a
// rejection.
func (g *Gateway) wouldPass(ctx context.Context, s *session, sess *engine.Session, r toolRoute) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			g.log.Error("MCP tools/list review panicked; the tool is not listed", "request_id", s.id, "tool", r.listed, "panic", fmt.Sprint(v))
			ok = false
		}
	}()
	plan := oneStep(s.nextStepID(), r, map[string]any{})
	want := plan.Steps[0]
	out, err := sess.Evaluate(ctx, plan)
	if err != nil {
		return false
	}
	for _, st := range out.Steps {
		if st.StepID == want.StepID {
			return st.Namespace == want.Namespace && st.AgentName == want.AgentName && st.Capability() == want.Capability()
		}
	}
	return false
}
