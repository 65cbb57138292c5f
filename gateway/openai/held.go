package openai

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// heldKey names a new turn's conversation for tenant: every message as sent.
func heldKey(tenant string, msgs []message) string {
	s := sha256.New()
	s.Write([]byte(tenant))
	for _, m := range msgs {
		s.Write([]byte{0})
		s.Write(m.raw)
	}
	return hex.EncodeToString(s.Sum(nil))
}

// holdRound keeps a new turn's first round whose held calls are steps in the
// request's state, under the conversation's key (engine.Session.HoldRound), so that
// the same conversation sent again, to this daemon after a restart or to another
// replica sharing its store, is answered from it (see answerHeld). A failure to keep
// it is logged: the round is refused as held either way, and the conversation sent
// again asks the model again.
func (c *chatCall) holdRound(ctx context.Context, steps []engine.RoutingStep) {
	if !c.conv.newTurn || len(c.conv.rounds) > 0 || len(steps) == 0 {
		return
	}
	ids := make([]string, len(steps))
	for i, st := range steps {
		ids[i] = st.StepID
	}
	if err := c.sess.HoldRound(ctx, heldKey(c.tenant, c.req.messages), ids); err != nil {
		c.g.logger.WarnContext(ctx, "openai gateway: keeping a held round", "request_id", c.id, "error", err.Error())
	}
}

// answerHeld answers a new turn whose conversation a held round was kept for
// (engine.Driver.HeldRound): each held step that has not run is checked again
// (Driver.Check: the call its approval is bound to) and the calls now allowed are the
// answer, under the held round's request, with no upstream call and no new review;
// calls still held, rejected or expired are withheld as a review withholds them. A
// held step that passed has run, so the round is over once every one has. ok is
// false when no round is held for the conversation.
func (c *chatCall) answerHeld(ctx context.Context) (ok bool, e *apiError) {
	sess, steps, err := c.g.driver.HeldRound(ctx, engine.StageAfterPlanning, heldKey(c.tenant, c.req.messages))
	if err != nil {
		return true, driverError(err)
	}
	if sess == nil {
		return false, nil
	}
	c.id = sess.ID()
	c.w.Header().Set(c.idHeader, c.id)
	c.pin(sess)
	v := &roundReview{decisionID: engine.NewDecisionID()}
	for _, step := range steps {
		params := step.Parameters()
		args, err := engine.AppendJSON(nil, params)
		if err != nil {
			return true, driverError(err)
		}
		res, err := c.g.driver.Check(engine.WithDecisionID(ctx, engine.NewDecisionID()), op.Call{Operation: op.ToolCall, RequestID: c.id,
			StepID: step.StepID, Namespace: step.Namespace, AgentName: step.AgentName, Capability: step.Capability(), Parameters: params})
		if err != nil {
			if _, refused := engine.AsRefusal(err); refused {
				return true, driverError(err)
			}
		}
		v.admitted(c.cfg, &engine.Admission{Allowed: allowedOf(step, args, res, err), Denied: deniedOf(step, res, err)})
	}
	ans := &answer{calls: v.calls, finish: "tool_calls"}
	if len(v.calls) == 0 {
		v.rejection = &rejection{code: codeToolCallsDenied}
		if c.cfg.OnReject == config.RejectError {
			return true, v.error()
		}
		text := v.refusal(c.cfg)
		ans = &answer{content: &text, finish: "stop"}
	} else if len(v.denials) > 0 {
		text := v.text()
		ans.content = &text
	}
	meta := chunkMeta{ID: completionID(), Created: time.Now().Unix(), Model: c.req.model}
	if c.req.stream {
		s := newStreamWriter(c.w, modeBuffered)
		s.meta = meta
		s.finish(ans, nil)
		return true, nil
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(completionBody(&reply{meta: meta, usage: noUsage}, ans))
	return true, nil
}

// noUsage is the usage of an answer no model wrote.
var noUsage = json.RawMessage(`{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`)

// allowedOf is the admitted call of a check of step that allowed it.
func allowedOf(step engine.RoutingStep, args []byte, res *engine.CheckResult, err error) []engine.AdmittedCall {
	if err != nil || !res.Allowed {
		return nil
	}
	return []engine.AdmittedCall{{Step: step, Arguments: args, Check: res}}
}

// deniedOf is the denied call of a check of step that did not allow it.
func deniedOf(step engine.RoutingStep, res *engine.CheckResult, err error) []engine.DeniedCall {
	switch {
	case err != nil:
		return []engine.DeniedCall{{Step: step, Err: err}}
	case !res.Allowed:
		return []engine.DeniedCall{{Step: step, Denial: res.Denial, Approval: res.Approval}}
	}
	return nil
}
