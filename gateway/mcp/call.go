package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/api"
	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// refusal is why the gateway did not forward a call: a bounded code and a reason, and
// the approval the call waits for, if any.
type refusal struct {
	Code, Reason string
	Approval     *api.ApprovalRef
}

// callTool runs one tools/call (see the package doc): review, guards, forward, report.
func (g *Gateway) callTool(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	g.inflight.Add(1)
	defer g.inflight.Add(-1)
	s := g.sessionOf(req.Session, req.ClientInfo())
	defer g.recoverCall(s, &res)
	route, ok := (*g.tools.Load())[req.Params.Name]
	if !ok {
		return refused(s.id, "", &refusal{Code: "unknown_tool", Reason: fmt.Sprintf(
			"no upstream MCP server offers a tool named %q (names are case-sensitive; see tools/list)", req.Params.Name)}), nil
	}
	args := map[string]any{}
	if len(req.Params.Arguments) > 0 && string(req.Params.Arguments) != "null" {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return refused(s.id, "", &refusal{Code: "invalid_arguments", Reason: "the arguments are not a JSON object: " + err.Error()}), nil
		}
		// A repeated name is lost in args (the last wins): the client may mean the first.
		if name, repeated := engine.RepeatedMember(req.Params.Arguments); repeated {
			return refused(s.id, "", &refusal{Code: engine.DenialAmbiguousParameters, Reason: fmt.Sprintf(
				"the arguments repeat the member %q, which a client may read otherwise than the review", name)}), nil
		}
	}
	call, ref := g.admit(ctx, s, route, args)
	step := call.Step
	if ref != nil {
		if ask := g.elicit(req, ref); ask != nil {
			return annotate(ask, s.id, step.StepID), nil
		}
		return refused(s.id, step.StepID, ref), nil
	}
	up, ok := g.upstreamOf(step)
	if !ok {
		return refused(s.id, step.StepID, &refusal{Code: "no_upstream", Reason: fmt.Sprintf(
			"the reviewed step names %s/%s, which no upstream MCP server is", step.Namespace, step.AgentName)}), nil
	}
	res, err = g.forward(ctx, s, req, up, call)
	if err != nil {
		return annotate(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, s.id, step.StepID), nil
	}
	return annotate(res, s.id, step.StepID), nil
}

// forward calls the admitted step on up with its canonical arguments, with the tool's
// timeout and the client's progress token routed back to it, and reports the outcome
// beside the answer (see report).
func (g *Gateway) forward(ctx context.Context, s *session, req *mcp.CallToolRequest, up *upstream, call engine.AdmittedCall) (*mcp.CallToolResult, error) {
	step := call.Step
	params := &mcp.CallToolParams{Name: step.Capability(), Arguments: json.RawMessage(call.Arguments)}
	if token := req.Params.GetProgressToken(); token != nil {
		upstreamToken, done := g.progress.add(ctx, req.Session, token)
		defer done()
		params.SetProgressToken(upstreamToken)
	}
	timeout := up.settings().ToolTimeout(params.Name)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	res, err := up.callTool(cctx, params)
	duration := time.Since(started)
	if err != nil {
		err = callError(ctx, cctx, err, up.name, timeout)
	}
	r, finished := g.finish(ctx, s, step, up.settings(), res, err, duration)
	if !finished && err == nil {
		// The result's labels are not the request's: the client must not see it.
		res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the tool's result could not be labelled"}}}
	}
	g.inflight.Add(1) // Shutdown waits for the report too
	go func() {
		defer g.inflight.Add(-1)
		g.report(ctx, s, r)
	}()
	return res, err
}

// admit runs the call's plan phase through the engine's admission
// (engine.Session.Admit): the whole after_planning stage, then the accepted step's
// tool_call check. It returns the admitted call (the accepted step and its canonical
// arguments, all that forward sends the upstream), or why the call must not run.
func (g *Gateway) admit(ctx context.Context, s *session, r toolRoute, args map[string]any) (engine.AdmittedCall, *refusal) {
	ctx = s.confine(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	key := ""
	if digest, err := engine.ParametersDigest(args); err == nil {
		key = r.listed + "\x00" + digest
		if step, ok := s.held[key]; ok {
			return g.recheck(ctx, s, key, step)
		}
	}
	stepID := s.nextStepID()
	s.calls++
	refused := engine.AdmittedCall{Step: engine.RoutingStep{StepID: stepID}}
	sess, err := g.cfg.Driver.Resume(ctx, engine.StageAfterPlanning, s.id, s.opening)
	if err != nil {
		return refused, refusalOf(err)
	}
	a, err := sess.Admit(ctx, oneStep(stepID, r, args), 0)
	if err != nil {
		return refused, refusalOf(err)
	}
	for _, call := range a.Allowed {
		if call.Step.StepID == stepID {
			return call, nil
		}
	}
	for _, d := range a.Denied {
		if d.Step.StepID == stepID {
			code, reason := d.Reason()
			if d.Approval != nil && key != "" {
				if s.held == nil {
					s.held = map[string]engine.RoutingStep{}
				}
				s.held[key] = d.Step
			}
			return refused, heldRefusal(code, reason, d.Approval)
		}
	}
	return refused, &refusal{Code: "removed_by_review", Reason: "the after_planning stage removed this call from the plan"}
}

// recheck checks again a call an approval held, as the accepted step it was
// admitted as (the step the approval is bound to), with no new plan phase: once
// approved it is admitted with the step's canonical arguments and forgotten. The
// caller holds s.mu.
func (g *Gateway) recheck(ctx context.Context, s *session, key string, step engine.RoutingStep) (engine.AdmittedCall, *refusal) {
	refused := engine.AdmittedCall{Step: engine.RoutingStep{StepID: step.StepID}}
	params, _ := step.Metadata["parameters"].(map[string]any)
	args, err := engine.AppendJSON(nil, params)
	if err != nil {
		return refused, &refusal{Code: engine.DenialInvalidParameters, Reason: "the held step's parameters do not encode as JSON: " + err.Error()}
	}
	res, err := g.cfg.Driver.Check(ctx, op.Call{Operation: op.ToolCall, RequestID: s.id, StepID: step.StepID, Namespace: step.Namespace,
		AgentName: step.AgentName, Capability: step.Capability(), Parameters: params})
	switch {
	case err != nil:
		return refused, refusalOf(err)
	case res.Allowed:
		delete(s.held, key)
		return engine.AdmittedCall{Step: step, Arguments: args, Check: res}, nil
	}
	return refused, heldRefusal(res.Denial.Code, res.Denial.Reason, res.Approval)
}

// heldRefusal is the refusal of a denied call, naming the approval it waits for (and
// where to decide it) when a rule asked for one.
func heldRefusal(code, reason string, a *engine.Approval) *refusal {
	if a == nil {
		return &refusal{Code: code, Reason: reason}
	}
	ref := api.RefOf(a)
	if code == engine.DenialApprovalRequired {
		reason += "; decide it at " + ref.URL + ", then call the tool again with the same arguments"
	}
	return &refusal{Code: code, Reason: reason, Approval: ref}
}

// finish tells the driver how a forwarded call ended (Driver.Finish) before its
// answer goes back, so that the labels of its result are the request's before the
// client, or a model behind it, has seen it (docs/semantics.md §8.21); with the
// server's meta_labels set, those it states in the result's _meta["dev.agentd/labels"]
// too. finished is false when the driver did not take the finish: a failure to
// report is logged.
func (g *Gateway) finish(ctx context.Context, s *session, step engine.RoutingStep, up *settings, res *mcp.CallToolResult, callErr error, d time.Duration) (r engine.StepResult, finished bool) {
	ctx = s.confine(context.WithoutCancel(ctx))
	params, _ := step.Metadata["parameters"].(map[string]any)
	r = engine.StepResult{
		StepID: step.StepID, AgentName: step.AgentName, Namespace: step.Namespace, Capability: step.Capability(),
		Parameters: params, Success: callErr == nil && !res.IsError, Duration: d, Attempts: 1,
	}
	switch {
	case callErr != nil:
		r.Error = callErr.Error()
	default:
		r.Response = response(res)
		if res.IsError {
			r.Error = "the tool reported an error"
		}
	}
	f := engine.Finish{RequestID: s.id, StepID: step.StepID, Status: engine.RunSucceeded, Response: r.Response, Error: r.Error, Duration: d}
	if !r.Success {
		f.Status = engine.RunFailed
	}
	var labelsOK bool
	if f.Labels, labelsOK = metaLabels(up, res); !labelsOK {
		g.log.Warn("an MCP tool result states labels that are not a list of label names", "request_id", s.id, "step_id", step.StepID)
		return r, false
	}
	s.mu.Lock()
	err := g.cfg.Driver.Finish(ctx, f)
	s.mu.Unlock()
	if err != nil {
		g.log.Warn("reporting an MCP call to the driver failed", "request_id", s.id, "step_id", step.StepID, "error", err.Error())
		return r, false
	}
	return r, true
}

// metaLabels returns the labels res states in _meta["dev.agentd/labels"] when the
// server's meta_labels is set (none otherwise); ok is false when they are stated but
// not as a list of strings (label names are the driver's to check).
func metaLabels(up *settings, res *mcp.CallToolResult) (labels []string, ok bool) {
	if !up.MetaLabels || res == nil {
		return nil, true
	}
	v, found := res.Meta[metaLabelsKey]
	if !found {
		return nil, true
	}
	list, isList := v.([]any)
	if !isList {
		return nil, false
	}
	for _, l := range list {
		s, isString := l.(string)
		if !isString {
			return nil, false
		}
		labels = append(labels, s)
	}
	return labels, true
}

// report sends the session's combined result, with r, to after_execution. It runs
// beside the call's answer, which nothing it does can change (after_execution
// observes only), so a session's next call may be reviewed before it. A failure to
// report, a hook panic included, is logged; the call's answer stands.
func (g *Gateway) report(ctx context.Context, s *session, r engine.StepResult) {
	ctx = s.confine(context.WithoutCancel(ctx))
	defer func() {
		if v := recover(); v != nil {
			g.log.Error("reporting an MCP call panicked", "request_id", s.id, "step_id", r.StepID, "panic", fmt.Sprint(v))
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := g.cfg.Driver.Resume(ctx, engine.StageAfterExecution, s.id, s.opening)
	if err == nil {
		_, err = sess.AfterExecution(ctx, s.combined(r))
	}
	if err != nil {
		g.log.Warn("reporting an MCP call to the driver failed", "request_id", s.id, "step_id", r.StepID, "error", err.Error())
	}
}

// response is what the record keeps of a tool result: its structured content as data
// and its text content; other content is summarized by type.
func response(res *mcp.CallToolResult) map[string]any {
	out := map[string]any{}
	if res.StructuredContent != nil {
		out["data"] = res.StructuredContent
	}
	var text []string
	var other []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text = append(text, c.Text)
		case *mcp.ImageContent:
			other = append(other, "image "+c.MIMEType)
		case *mcp.AudioContent:
			other = append(other, "audio "+c.MIMEType)
		case *mcp.ResourceLink:
			other = append(other, "resource_link "+c.URI)
		case *mcp.EmbeddedResource:
			other = append(other, "resource "+c.Resource.URI)
		}
	}
	if len(text) > 0 {
		out["text"] = strings.Join(text, "\n")
	}
	if len(other) > 0 {
		out["content"] = other
	}
	return out
}

// upstreamOf returns the upstream the accepted step names: its agent and namespace.
func (g *Gateway) upstreamOf(step engine.RoutingStep) (*upstream, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, u := range g.upstreams {
		if s := u.settings(); s.Name == step.AgentName && s.Namespace == step.Namespace {
			return u, true
		}
	}
	return nil, false
}

// callError says why a forwarded call failed: the client cancelled it, the tool's
// timeout passed, the upstream is not connected or broke, or the upstream answered
// with a JSON-RPC error.
func callError(ctx, cctx context.Context, err error, server string, timeout time.Duration) error {
	var unavailable *errUnavailable
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("cancelled by the client: %w", err)
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("MCP server %q did not answer within the tool's timeout of %s", server, timeout)
	case errors.As(err, &unavailable):
		return err
	}
	return fmt.Errorf("MCP server %q failed the call: %w", server, err)
}

// refusalOf translates a driver error into a refusal.
func refusalOf(err error) *refusal {
	if r, ok := engine.AsRequiredAfterPlanningError(err); ok {
		code, reason := string(r.Reason), r.Cause.Error()
		if rej, ok := builtin.AsPlanRejection(r); ok && len(rej.Violations) > 0 {
			code = rej.Violations[0].Code
			parts := make([]string, len(rej.Violations))
			for i, v := range rej.Violations {
				parts[i] = v.Message
			}
			reason = strings.Join(parts, "; ")
		}
		return &refusal{Code: code, Reason: fmt.Sprintf("the required after_planning hook %q rejected the call: %s", r.Hook, reason)}
	}
	if pe, ok := engine.AsPlanError(err); ok {
		return &refusal{Code: string(pe.Code), Reason: pe.Error()}
	}
	// a refusal, a guard error, an invalid call: api's code and client-safe message,
	// as the stage API answers them
	e := api.ErrorOf(err)
	if r, ok := engine.AsRefusal(err); ok && r.Code.Final() {
		e.Message += "; this MCP session's request takes no more calls: open a new session to go on"
	}
	return &refusal{Code: string(e.Type), Reason: e.Message}
}

// refused is the tool result of a refusal.
func refused(requestID, stepID string, r *refusal) *mcp.CallToolResult {
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: r.Code + ": " + r.Reason}}}
	res = annotate(res, requestID, stepID)
	meta := map[string]any{"code": r.Code, "reason": r.Reason}
	if r.Approval != nil {
		meta["approval"] = map[string]any{"id": r.Approval.ID, "status": r.Approval.Status, "expires_at": r.Approval.ExpiresAt, "url": r.Approval.URL}
	}
	res.Meta[metaRefusal] = meta
	return res
}

// annotate returns res with the request and step ids in its _meta (a copy: the
// upstream's result is not changed).
func annotate(res *mcp.CallToolResult, requestID, stepID string) *mcp.CallToolResult {
	out := *res
	out.Meta = maps.Clone(res.Meta)
	if out.Meta == nil {
		out.Meta = mcp.Meta{}
	}
	out.Meta[metaRequestID] = requestID
	if stepID != "" {
		out.Meta[metaStepID] = stepID
	}
	return &out
}

// recoverCall turns a panic while serving a call (a hook panic the driver re-raised)
// into a refusal for that call; the gateway keeps serving.
func (g *Gateway) recoverCall(s *session, res **mcp.CallToolResult) {
	if v := recover(); v != nil {
		g.log.Error("MCP tools/call panicked", "request_id", s.id, "panic", fmt.Sprint(v))
		*res = refused(s.id, "", &refusal{Code: "internal", Reason: "internal error: a hook panicked"})
	}
}
