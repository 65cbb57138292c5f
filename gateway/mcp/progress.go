package mcp

import (
	"context"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressRoutes maps the progress tokens the gateway sends upstream to the session and
// token of the client call they report on. Upstream connections are shared by every
// session, so each forwarded call gets a token of its own.
type progressRoutes struct {
	mu     sync.Mutex
	last   uint64
	routes map[string]progressRoute
}

type progressRoute struct {
	ctx     context.Context
	session *mcp.ServerSession
	token   any
}

// add routes a new upstream token to the client's token of ss, until done is called.
// ctx is the client call's: a notification sent with it travels with the call's answer
// (on its event stream, over HTTP).
func (p *progressRoutes) add(ctx context.Context, ss *mcp.ServerSession, token any) (upstream string, done func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last++
	upstream = "agentd-" + strconv.FormatUint(p.last, 10)
	p.routes[upstream] = progressRoute{ctx: ctx, session: ss, token: token}
	return upstream, func() {
		p.mu.Lock()
		delete(p.routes, upstream)
		p.mu.Unlock()
	}
}

// forward sends an upstream's progress notification to the client whose call it is
// about, under the client's token. A notification for no routed call is dropped: the
// SDK hands notifications to the gateway concurrently with responses, so one that the
// upstream sent just before its answer may arrive after the call ended, and is lost.
func (p *progressRoutes) forward(n *mcp.ProgressNotificationParams) {
	token, _ := n.ProgressToken.(string)
	p.mu.Lock()
	r, ok := p.routes[token]
	p.mu.Unlock()
	if !ok {
		return
	}
	out := *n
	out.ProgressToken = r.token
	_ = r.session.NotifyProgress(r.ctx, &out)
}
