package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/engine"
)

// RequestIDHeader is the HTTP response header that names the agentd request of an MCP
// session.
const RequestIDHeader = "X-Agentd-Request-Id"

// metaRequestID and metaStepID are the _meta keys of a tool result naming the request
// and the step of the call; metaRefusal holds a refusal's {code, reason}; under
// metaLabelsKey an upstream with meta_labels states its result's labels.
const (
	metaRequestID = "dev.agentd/request_id"
	metaStepID    = "dev.agentd/step_id"
	metaRefusal   = "dev.agentd/refusal"
	metaLabelsKey = "dev.agentd/labels"
)

// newSessionID returns a random MCP session id.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requestID is the agentd request id of the MCP session with id sessionID.
func requestID(sessionID string) string { return "mcp-" + sessionID }

// session is the gateway's side of one MCP session: its agentd request and the results
// of its calls so far. mu makes the session's stage calls one at a time, as the driver
// expects of one request.
type session struct {
	id      string
	tenant  string
	opening engine.Opening

	mu      sync.Mutex
	calls   int
	results []engine.StepResult
	// held maps a call an approval holds (its tool and its arguments' digest) to the
	// accepted step it was checked as: the same call sent again is checked again as that
	// step, the call the approval is bound to (docs/semantics.md §8.20), without a new
	// plan phase.
	held map[string]engine.RoutingStep
}

// sessionOf returns the session of ss, creating it on first use; it is forgotten when
// ss ends. client is the client's identity when the protocol gives it per request.
func (g *Gateway) sessionOf(ss *mcp.ServerSession, client *mcp.Implementation) *session {
	if v, ok := g.sessions.Load(ss); ok {
		return v.(*session)
	}
	id := ss.ID()
	if id == "" { // stdio: one session per connection, no id on the wire
		id = newSessionID()
	}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		client = p.ClientInfo
	}
	who, _ := g.owners.of(ss.ID())
	s := &session{id: requestID(id), tenant: who.tenant, opening: sessionOpening(client)}
	if s.tenant != "" {
		s.opening.Metadata[engine.TenantKey] = s.tenant
	}
	v, loaded := g.sessions.LoadOrStore(ss, s)
	if !loaded {
		go func() {
			_ = ss.Wait()
			g.sessions.Delete(ss)
		}()
	}
	return v.(*session)
}

// confine returns ctx confined to the session's tenant, if it has one: the driver
// then refuses to touch a request of another tenant.
func (s *session) confine(ctx context.Context) context.Context {
	if s.tenant == "" {
		return ctx
	}
	return engine.WithTenant(ctx, s.tenant)
}

// sessionOpening is what a session's request opens from: metadata naming the gateway
// and the client, when it said who it is.
func sessionOpening(client *mcp.Implementation) engine.Opening {
	meta := map[string]any{"gateway": "mcp"}
	if client != nil {
		meta["client"] = map[string]any{"name": client.Name, "version": client.Version}
	}
	return engine.Opening{Metadata: meta, PhasesIndependent: true}
}

// nextStepID is the step id the session's next call gets.
func (s *session) nextStepID() string { return "step-" + strconv.Itoa(s.calls+1) }

// combined is the session's combined result so far, with r added.
func (s *session) combined(r engine.StepResult) *engine.ExecutionResult {
	s.results = append(s.results, r)
	out := &engine.ExecutionResult{PlanID: "plan-" + r.StepID, Steps: append([]engine.StepResult(nil), s.results...), Success: true, PhaseCount: len(s.results)}
	for _, r := range s.results {
		out.Success = out.Success && r.Success
		out.TotalDuration += r.Duration
	}
	return out
}

// oneStep is the one-step plan of a call of tool (route) with args as step stepID.
func oneStep(stepID string, r toolRoute, args map[string]any) *engine.RoutingPlan {
	s := r.up.settings()
	more := false
	return &engine.RoutingPlan{
		PlanID: "plan-" + stepID, Mode: engine.ModeAutonomous, Terminal: &more, CreatedAt: time.Now().UTC(),
		Steps: []engine.RoutingStep{{
			StepID: stepID, AgentName: s.Name, Namespace: s.Namespace, Instruction: "tools/call " + r.listed,
			Metadata: map[string]any{"capability": r.item.Name, "parameters": args},
		}},
	}
}
