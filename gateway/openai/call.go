package openai

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// chatCall serves one chat-completions call of request id.
type chatCall struct {
	g    *Gateway
	w    http.ResponseWriter
	req  *chatRequest
	conv *conversation
	id   string
	// token is carried by the ids the gateway issues for the request's tool calls (see
	// callID, requestID).
	token    string
	tenant   string
	idHeader string
	// gen and cfg are the live generation's until the request is known, then its own.
	gen  *config.Generation
	cfg  *config.OpenAIGateway
	sess *engine.Session
	// rec is the request's record as tool results found it; nil for a user turn.
	rec *engine.ExecutionRecord
}

// serve runs the call: the request's stage for what the client sent, then the upstream,
// then the stage for what the upstream answered. It writes the answer, or returns the
// error to answer.
func (c *chatCall) serve(ctx context.Context) *apiError {
	if c.conv.newTurn {
		if held, e := c.answerHeld(ctx); held {
			return e
		}
	}
	short, e := c.begin(ctx)
	c.w.Header().Set(c.idHeader, c.id)
	if e != nil {
		return e
	}
	if short != nil {
		c.answerShortCircuit(*short)
		return nil
	}
	body, err := c.req.withSystem(engine.RenderEnrichments(c.sess.Context().Enrichments))
	if err != nil {
		return newError(http.StatusInternalServerError, typeServer, codeInternal, "encode the upstream request: %v", err)
	}
	if c.req.stream {
		return c.stream(ctx, body)
	}
	span := c.startChat(ctx)
	x, e := c.g.up.call(ctx, c.cfg, http.MethodPost, "/chat/completions", body, false)
	if e != nil {
		endChat(span, nil, e)
		return e
	}
	data, e := x.readAll()
	x.close()
	if e != nil {
		endChat(span, nil, e)
		return e
	}
	rep, e := parseCompletion(data)
	endChat(span, usageOf(span, "", nil, data), e)
	if e != nil {
		return e
	}
	ans, e := c.decide(ctx, rep)
	if e != nil {
		return e
	}
	c.w.Header().Set("Content-Type", "application/json")
	_, _ = c.w.Write(completionBody(rep, ans))
	return nil
}

// begin runs the stage of what the client sent. A user turn opens the request and runs
// before_planning; an accepted short circuit is returned as the answer. Tool results
// resume the request, report how each call of the last round ended, and run
// after_execution on the turn's combined result.
func (c *chatCall) begin(ctx context.Context) (*string, *apiError) {
	o := c.opening()
	if c.conv.newTurn {
		sess, err := c.g.driver.Open(ctx, c.id, o)
		if err != nil {
			return nil, driverError(err)
		}
		c.pin(sess)
		bp, err := sess.BeforePlanning(ctx)
		if err != nil {
			return nil, driverError(err)
		}
		if bp.ShortCircuit != nil {
			return &bp.ShortCircuit.ShortCircuit.Response, nil
		}
		return nil, nil
	}
	sess, err := c.g.driver.Resume(ctx, engine.StageAfterExecution, c.id, o)
	if err != nil {
		return nil, driverError(err)
	}
	c.pin(sess)
	steps := stepIndex{}
	switch rec, err := sess.Record(ctx); {
	case errors.Is(err, engine.ErrRecordNotFound): // opened afresh, as for a state that expired
	case err != nil:
		return nil, driverError(&engine.RefusalError{Code: engine.RefusedStoreUnavailable, RequestID: c.id, Err: err})
	default:
		c.rec, steps = rec, indexSteps(rec)
	}
	result := combinedResult(c.cfg, c.id, c.conv, steps)
	if e := c.report(ctx, result, steps); e != nil {
		return nil, e
	}
	if _, err := sess.AfterExecution(ctx, result); err != nil {
		return nil, driverError(err)
	}
	return nil, nil
}

// opening is how the call opens its request, or reopens one whose state is gone: the
// turn's text and the body's metadata; an invalid round of tool calls fails the
// request (a model's round is answered once, never sent again corrected); and the
// request's cache dimensions (see cacheVary).
func (c *chatCall) opening() engine.Opening {
	return engine.Opening{Text: c.conv.text, Metadata: c.req.metadata, InvalidPlanFails: true, CacheVary: c.cacheVary()}
}

// report tells the driver how each tool call of the last round ended: as the client
// ran it, with its content as the response (the step results of result). A call
// already reported (the client sent the results again) or never allowed is left as it
// is.
func (c *chatCall) report(ctx context.Context, result *engine.ExecutionResult, steps stepIndex) *apiError {
	last := len(c.conv.rounds)
	for _, r := range c.conv.results {
		if r.phase != last {
			continue
		}
		id := steps.step(c.conv, r)
		for _, sr := range result.Steps {
			if sr.StepID != id {
				continue
			}
			err := c.g.driver.Finish(ctx, engine.Finish{RequestID: c.id, StepID: id, Status: engine.RunSucceeded, Response: sr.Response})
			var fe *engine.FinishError
			if err != nil && !errors.As(err, &fe) {
				return driverError(err)
			}
		}
	}
	return nil
}

// pin makes the request's own generation (and its gateways.openai) the call's.
func (c *chatCall) pin(sess *engine.Session) {
	c.sess = sess
	if gen := c.g.reg.Get(sess.Generation().ID); gen != nil && gen.Gateways.OpenAI != nil {
		c.gen, c.cfg = gen, gen.Gateways.OpenAI
	}
}

// answer is what the client gets for an upstream reply.
type answer struct {
	content *string // nil: null
	// tail is the end of content the gateway wrote (denied calls, a refusal): all that
	// a pass-through stream, which already sent the reply's own text, still sends.
	tail    string
	refusal *string
	calls   []toolCall
	finish  string
}

// decide runs the stage of an upstream reply. An answer goes through after_synthesis,
// which completes the request: its text is the content, or, when the reply has no
// content but a refusal, the refusal, answered as the refusal; a refusal beside
// content is dropped, so no text reaches the client that after_synthesis did not see.
// A round of tool calls is reviewed (see review): its accepted, allowed calls are
// returned, each withheld call is stated after the reply's content (a refusal beside
// tool calls is dropped); when nothing may run, the rejection is answered as
// on_reject says.
func (c *chatCall) decide(ctx context.Context, rep *reply) (*answer, *apiError) {
	if rep.final() {
		draft, refusal := "", rep.content == nil || *rep.content == ""
		refusal = refusal && rep.refusal != nil && *rep.refusal != ""
		switch {
		case refusal:
			draft = *rep.refusal
		case rep.content != nil:
			draft = *rep.content
		}
		out, err := c.sess.AfterSynthesis(ctx, draft)
		if err != nil {
			return nil, driverError(err)
		}
		ans := &answer{finish: rep.finish}
		switch {
		case refusal:
			ans.refusal = &out.Response
		case rep.content != nil || out.Response != "":
			ans.content = &out.Response
		}
		return ans, nil
	}
	v, e := c.review(ctx, rep.calls)
	if e != nil {
		return nil, e
	}
	own := ""
	if rep.content != nil && *rep.content != "" {
		own = *rep.content
	}
	if v.rejection != nil {
		if c.cfg.OnReject == config.RejectError {
			return nil, v.error()
		}
		text := v.refusal(c.cfg)
		return &answer{content: &text, tail: separated(own, text), finish: "stop"}, nil
	}
	ans := &answer{calls: v.calls, finish: "tool_calls"}
	if len(v.denials) > 0 {
		ans.tail = separated(own, v.text())
	}
	if rep.content != nil || ans.tail != "" {
		content := own + ans.tail
		ans.content = &content
	}
	return ans, nil
}

// separated returns text as it follows before: after a blank line when before is not
// empty.
func separated(before, text string) string {
	if before == "" {
		return text
	}
	return "\n\n" + text
}

// review puts one round of tool calls through the engine's admission
// (engine.Session.Admit): the round is the next phase's plan (see buildPlan), which the
// whole after_planning stage reviews; each accepted step is then checked as a
// tool_call operation. A required hook's rejection, an invalid plan or invalid
// arguments reject the round (the last two fail the request, as a broken planner
// does); a call with no catalog identity or denied by a guard is withheld. Only the
// admitted calls, in their canonical form, reach the client.
func (c *chatCall) review(ctx context.Context, calls []toolCall) (*roundReview, *apiError) {
	phase := len(c.conv.rounds) + 1
	v := &roundReview{decisionID: engine.NewDecisionID()}
	p, err := buildPlan(c.cfg, c.id, c.token, c.conv.text, phase, c.attempt(phase), calls, time.Now())
	if ae, ok := err.(*argumentsError); ok {
		c.failRequest(ctx, ae)
		v.rejection = &rejection{code: codeInvalidToolArguments, message: ae.Error()}
		return v, nil
	}
	for _, u := range p.unmapped {
		v.denials = append(v.denials, denial{Tool: u.Function.Name, Code: "tool_not_mapped",
			Reason: "the function has no catalog identity in gateways.openai.tools"})
	}
	if len(p.plan.Steps) == 0 {
		v.rejection = &rejection{code: codeToolCallsDenied}
		return v, nil
	}
	a, err := c.sess.Admit(engine.WithDecisionID(ctx, v.decisionID), p.plan, phase)
	if r, ok := engine.AsRequiredAfterPlanningError(err); ok {
		v.rejection = requiredRejection(r)
		return v, nil
	}
	if pe, ok := engine.AsPlanError(err); ok {
		v.rejection = &rejection{code: codeInvalidPlan, message: pe.Error()}
		return v, nil
	}
	if err != nil {
		return nil, driverError(err)
	}
	v.admitted(c.cfg, a)
	if len(v.calls) == 0 {
		v.rejection = &rejection{code: codeToolCallsDenied}
		if len(v.held()) == 0 {
			c.failRequest(ctx, &deniedRound{denials: v.denials})
		} else { // held for an approval: the request stays open, the round is kept
			c.holdRound(ctx, heldSteps(a))
		}
	}
	return v, nil
}

// heldSteps are the accepted steps of an admission that wait for an approval.
func heldSteps(a *engine.Admission) []engine.RoutingStep {
	var out []engine.RoutingStep
	for _, d := range a.Denied {
		if d.Approval != nil && d.Denial != nil && d.Denial.Code == engine.DenialApprovalRequired {
			out = append(out, d.Step)
		}
	}
	return out
}

// attempt numbers this call's attempt at phase: one more than the attempts the
// request's record already holds (the client sent a round again).
func (c *chatCall) attempt(phase int) int {
	n := 1
	if c.rec != nil {
		for _, ph := range c.rec.Phases {
			if ph.Phase == phase {
				n++
			}
		}
	}
	return n
}

// failRequest fails the request with err; a store failure is logged, the client's
// answer says why the round was rejected either way.
func (c *chatCall) failRequest(ctx context.Context, err error) {
	if ferr := c.sess.Fail(ctx, err); ferr != nil {
		c.g.logger.WarnContext(ctx, "openai gateway: failing the request", "request_id", c.id, "error", ferr.Error())
	}
}

// rewritesResponse reports whether an after_synthesis hook of gen could change a
// response: one with any step that does not keep it.
func rewritesResponse(gen *config.Generation) bool {
	for _, h := range gen.Hooks {
		if h.Stage != engine.StageAfterSynthesis {
			continue
		}
		for _, step := range h.Steps {
			if spec, ok := builtin.Lookup(step); !ok || !spec.KeepsResponse {
				return true
			}
		}
	}
	return false
}
