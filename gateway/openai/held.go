package openai

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// maxHeld bounds the held rounds a gateway keeps (the oldest kept go first).
const maxHeld = 4096

// heldRound is a turn's first round whose calls an approval holds (docs/semantics.md
// §8.20): the request, the token its issued call ids carry, and the accepted steps
// held. The same conversation sent again is answered from it, without the model.
type heldRound struct {
	id, token string
	steps     []engine.RoutingStep
}

// heldRounds are the held rounds by conversation (heldKey), in process: a restart or
// another replica asks the model again.
type heldRounds struct {
	mu    sync.Mutex
	m     map[string]heldRound
	order []string
}

func (h *heldRounds) get(key string) (heldRound, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.m[key]
	return r, ok
}

func (h *heldRounds) put(key string, r heldRound) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]heldRound{}
	}
	if _, ok := h.m[key]; !ok {
		h.order = append(h.order, key)
	}
	h.m[key] = r
	for len(h.order) > maxHeld {
		delete(h.m, h.order[0])
		h.order = h.order[1:]
	}
}

func (h *heldRounds) drop(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
}

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

// holdRound keeps a new turn's first round whose held calls are steps, so that the
// same conversation sent again is answered from it (see answerHeld).
func (c *chatCall) holdRound(steps []engine.RoutingStep) {
	if !c.conv.newTurn || len(c.conv.rounds) > 0 || len(steps) == 0 {
		return
	}
	c.g.held.put(heldKey(c.tenant, c.req.messages), heldRound{id: c.id, token: c.token, steps: steps})
}

// answerHeld answers a new turn whose conversation a held round was kept for: each
// held step is checked again (Driver.Check: the call its approval is bound to) and the
// calls now allowed are the answer, with no upstream call and no new review; calls
// still held, rejected or expired are withheld as a review withholds them. Once every
// held call has passed the round is forgotten. ok is false when no round is held for
// the conversation.
func (c *chatCall) answerHeld(ctx context.Context) (ok bool, e *apiError) {
	key := heldKey(c.tenant, c.req.messages)
	h, ok := c.g.held.get(key)
	if !ok {
		return false, nil
	}
	c.id, c.token = h.id, h.token
	c.w.Header().Set(c.idHeader, c.id)
	sess, err := c.g.driver.Resume(ctx, engine.StageAfterPlanning, c.id, c.opening())
	if err != nil {
		return true, driverError(err)
	}
	c.pin(sess)
	v := &roundReview{decisionID: engine.NewDecisionID()}
	for _, step := range h.steps {
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
	if len(v.calls) == len(h.steps) {
		c.g.held.drop(key)
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
