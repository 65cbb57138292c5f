package mcp

import (
	"fmt"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/engine"
)

// elicitKey names the gateway's input request in a held call's result, and the
// client's answer to it in the call sent again.
const elicitKey = "dev.agentd/approval"

// elicit returns the result that asks the client, through URL-mode elicitation (MCP
// 2025-11-25), to have its user open the page where approvals are decided
// (Config.ApprovalsPage) for the approval a held call waits for, or nil to answer the
// refusal itself. It asks only for a call held approval_required, of a client that
// declared the elicitation capability with URL mode in its handshake, that is not
// already the call sent again with the client's answer, and only when the page has
// an absolute URL.
//
// The result carries the elicitation as an input request: the MCP SDK sends it to the
// client as an elicitation/create request within the call and, once the client
// answered, serves the call again with the answer (a client on a protocol version
// with multi round-trip requests, which declares no capabilities in a handshake, is
// never asked). The call comes back as the same call (tool and arguments), which the
// session checks again as the step it was held as (see recheck): it passes once
// approved and is refused otherwise, whatever the client answered (the approval
// decides, not the elicitation), and the client is not asked again in that call.
func (g *Gateway) elicit(req *mcp.CallToolRequest, ref *refusal) *mcp.CallToolResult {
	if ref.Approval == nil || ref.Code != engine.DenialApprovalRequired || !elicitsURL(req.Session) {
		return nil
	}
	if _, answered := req.Params.InputResponses[elicitKey]; answered {
		return nil
	}
	page := g.approvalsPage(req.Session.ID())
	if page == "" {
		return nil
	}
	a := ref.Approval
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{elicitKey: &mcp.ElicitParams{
		Mode: "url", URL: page, ElicitationID: a.ID,
		Message: fmt.Sprintf("agentd holds the call of %s for approval %s (pending until %s): %s. Decide it at %s (API: %s); the call is checked again when you answer.",
			req.Params.Name, a.ID, a.ExpiresAt.UTC().Format("2006-01-02 15:04:05Z"), ref.Reason, page, a.URL),
	}}}
}

// elicitsURL reports whether the client of ss declared URL-mode elicitation.
func elicitsURL(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.Capabilities.Elicitation.URL != nil
}

// approvalsPage is the absolute URL of Config.ApprovalsPage for session id: as
// configured when absolute, else resolved against the origin the session was opened
// at; "" when neither gives one.
func (g *Gateway) approvalsPage(id string) string {
	page, err := url.Parse(g.cfg.ApprovalsPage)
	if g.cfg.ApprovalsPage == "" || err != nil {
		return ""
	}
	if page.IsAbs() {
		return page.String()
	}
	origin, err := url.Parse(g.owners.originOf(id))
	if err != nil || !origin.IsAbs() || origin.Host == "" {
		return ""
	}
	return origin.ResolveReference(page).String()
}
