package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/jsonread"
)

// stepID is the step id of the n-th tool call (1-based, in the upstream's order) of a
// plan phase: unique within the request, valid in {{step-…}} references, and the same
// for the same round of any request, so that a policy's decision memo answers rounds
// it has seen. A later attempt at a phase already accepted (the client sent the same
// round again and the upstream answered anew) is marked: step-<phase>r<attempt>-<n>,
// so that its steps repeat none of the first's (plan rule 8).
func stepID(phase, attempt, n int) string {
	return "step-" + phaseTag(phase, attempt) + "-" + strconv.Itoa(n)
}

func phaseTag(phase, attempt int) string {
	if attempt <= 1 {
		return strconv.Itoa(phase)
	}
	return strconv.Itoa(phase) + "r" + strconv.Itoa(attempt)
}

// callID is the id the gateway issues for the tool call of step stepID of a request
// whose calls carry token (see requestToken): call_<token>_<step id without "step-">.
// The upstream's own call ids never reach the client; the token in the ids is how the
// rounds after the first find their request (see requestID). The id is kept in the
// step's metadata.tool_call_id.
func callID(token, stepID string) string {
	return "call_" + token + "_" + strings.TrimPrefix(stepID, "step-")
}

// tokenOf returns the request token of a tool call id the gateway issued, or "".
func tokenOf(id string) string {
	rest, ok := strings.CutPrefix(id, "call_")
	token, _, cut := strings.Cut(rest, "_")
	if !ok || !cut || !validToken(token) {
		return ""
	}
	return token
}

// metaToolCallID is the step metadata key holding the tool call's id.
const metaToolCallID = "tool_call_id"

// planID is the plan id of an attempt at a request's phase.
func planID(requestID string, phase, attempt int) string {
	return requestID + "/phase-" + phaseTag(phase, attempt)
}

// phasePlan is a round of tool calls as the plan of one phase.
type phasePlan struct {
	plan *engine.RoutingPlan
	// unmapped are the calls with no catalog identity: denied, not in the plan.
	unmapped []toolCall
}

// argumentsError reports a tool call whose arguments are not a JSON object, or an
// ambiguous one (repeated member names, or names that fold together): the round is no
// valid plan.
type argumentsError struct {
	call toolCall
	err  error
}

func (e *argumentsError) Error() string {
	return fmt.Sprintf("tool call %q (%s): the arguments are not an unambiguous JSON object: %v", e.call.ID, e.call.Function.Name, e.err)
}

// buildPlan turns a round of tool calls into the plan of an attempt at phase: one step
// per mapped call, with the mapping's namespace, agent and capability, the function
// name as instruction, the parsed arguments as metadata.parameters and the id the
// gateway issues for the call (callID with token) as metadata.tool_call_id. The plan
// is not terminal: the model answers after the tools ran. Arguments that are not a
// JSON object (an empty string is taken as {}) or are ambiguous are an
// *argumentsError.
func buildPlan(cfg *config.OpenAIGateway, requestID, token, request string, phase, attempt int, calls []toolCall, now time.Time) (*phasePlan, error) {
	notTerminal := false
	p := &phasePlan{
		plan: &engine.RoutingPlan{
			PlanID: planID(requestID, phase, attempt), OriginalRequest: request, Mode: engine.ModeAutonomous,
			Steps: make([]engine.RoutingStep, 0, len(calls)), CreatedAt: now.UTC(), Terminal: &notTerminal, PhaseNumber: phase,
		},
	}
	for i, c := range calls {
		args, err := parseArguments(c.Function.Arguments)
		if err != nil {
			return nil, &argumentsError{call: c, err: err}
		}
		id, ok := cfg.Tool(c.Function.Name)
		if !ok || !c.isFunction() {
			p.unmapped = append(p.unmapped, c)
			continue
		}
		sid := stepID(phase, attempt, i+1)
		p.plan.Steps = append(p.plan.Steps, engine.RoutingStep{
			StepID: sid, Namespace: id.Namespace, AgentName: id.Agent, Instruction: c.Function.Name,
			Metadata: map[string]any{
				"capability": id.Capability, "parameters": args, "function": c.Function.Name, metaToolCallID: callID(token, sid),
			},
		})
	}
	return p, nil
}

// parseArguments decodes tool call arguments, which must be a JSON object with no
// repeated member names and no two that fold together (argumentMembers); "" is {}.
func parseArguments(s string) (map[string]any, error) {
	data := []byte(s)
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}, nil
	}
	args, err := decodeArguments(data)
	if err != nil {
		return nil, err
	}
	if err := vetMembers(data, argumentMembers); err != nil {
		return nil, err
	}
	return args, nil
}

// decodeArguments decodes one JSON object, nothing after it, as encoding/json does:
// without reflection when jsonread can.
func decodeArguments(data []byte) (map[string]any, error) {
	var args map[string]any
	if r := jsonread.New(data); r.Map(&args) && r.End() {
		return args, nil
	}
	args = nil
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&args); err != nil {
		return nil, err
	}
	if args == nil {
		return nil, fmt.Errorf("null is not an object")
	}
	if jsonread.Trailing(data, dec.InputOffset()) >= 0 {
		return nil, fmt.Errorf("the arguments go on after their JSON value")
	}
	return args, nil
}

// issuedCall is the tool call the client gets for an admitted step: the id the
// gateway issued for it (metadata.tool_call_id), the function mapped to the step's
// identity, and the step's canonical arguments (engine.AdmittedCall.Arguments), never
// the upstream's text. A step whose identity no function maps to cannot be returned
// (ok false).
func issuedCall(cfg *config.OpenAIGateway, a engine.AdmittedCall) (toolCall, bool) {
	step := a.Step
	id := config.ToolIdentity{Namespace: step.Namespace, Agent: step.AgentName, Capability: step.Capability()}
	name, _ := step.Metadata["function"].(string)
	if mapped, ok := cfg.Tool(name); !ok || mapped != id {
		if name, ok = cfg.ToolFor(id); !ok {
			return toolCall{}, false
		}
	}
	callID, _ := step.Metadata[metaToolCallID].(string)
	if callID == "" {
		callID = "call_" + step.StepID
	}
	return toolCall{ID: callID, Type: "function", Function: functionCall{Name: name, Arguments: string(a.Arguments)}}, true
}

// combinedResult is the turn's tool messages as the combined execution result: one
// step result per tool message of a mapped function, in message order, under the step
// id steps gives the call. A tool result is taken as a success; its content is the
// step's response (JSON when it parses).
func combinedResult(cfg *config.OpenAIGateway, requestID string, conv *conversation, steps stepIndex) *engine.ExecutionResult {
	res := &engine.ExecutionResult{
		PlanID: planID(requestID, len(conv.rounds), 1), Success: true, PhaseCount: len(conv.rounds),
		Steps: make([]engine.StepResult, 0, len(conv.results)),
	}
	for _, r := range conv.results {
		id, ok := cfg.Tool(r.call.Function.Name)
		if !ok {
			continue
		}
		args, _ := parseArguments(r.call.Function.Arguments)
		res.Steps = append(res.Steps, engine.StepResult{
			StepID: steps.step(conv, r), AgentName: id.Agent, Namespace: id.Namespace, Capability: id.Capability,
			Parameters: args, Response: toolResponse(r.content), Success: true, Attempts: 1,
		})
	}
	return res
}

// stepIndex maps the tool calls of a request's accepted phases to their step ids:
// phase -> tool call id -> step id, read from the steps' metadata.tool_call_id.
type stepIndex map[int]map[string]string

// indexSteps reads the step ids of rec's accepted phases.
func indexSteps(rec *engine.ExecutionRecord) stepIndex {
	idx := stepIndex{}
	for _, ph := range rec.Phases {
		if ph.Plan == nil {
			continue
		}
		for _, st := range ph.Plan.Steps {
			if callID, ok := st.Metadata[metaToolCallID].(string); ok {
				if idx[ph.Phase] == nil {
					idx[ph.Phase] = map[string]string{}
				}
				idx[ph.Phase][callID] = st.StepID
			}
		}
	}
	return idx
}

// step returns the step id of the call a tool result answers: the recorded one (of
// the latest attempt at its phase), else (the record gone, or the step rewritten) the
// call's position in its round as the client has it, which is the upstream's when no
// call of the round was withheld and the phase took one attempt.
func (idx stepIndex) step(conv *conversation, r toolResult) string {
	if sid, ok := idx[r.phase][r.call.ID]; ok {
		return sid
	}
	for i, c := range conv.rounds[r.phase-1] {
		if c.ID == r.call.ID {
			return stepID(r.phase, 1, i+1)
		}
	}
	return stepID(r.phase, 1, 0)
}

// toolResponse is a tool message's content as a step response: the JSON value when the
// text is JSON, else the text.
func toolResponse(content json.RawMessage) any {
	s, _ := text(content)
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		return v
	}
	return s
}
