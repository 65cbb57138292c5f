package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
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
// so that its steps repeat none of the first's (plan rule 8). The call's own id is
// kept in the step's metadata.tool_call_id.
func stepID(phase, attempt, n int) string {
	return "step-" + phaseTag(phase, attempt) + "-" + strconv.Itoa(n)
}

func phaseTag(phase, attempt int) string {
	if attempt <= 1 {
		return strconv.Itoa(phase)
	}
	return strconv.Itoa(phase) + "r" + strconv.Itoa(attempt)
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
	// calls and args are the round's mapped calls and their parsed arguments, by step id.
	calls map[string]toolCall
	args  map[string]map[string]any
	// unmapped are the calls with no catalog identity: denied, not in the plan.
	unmapped []toolCall
}

// argumentsError reports a tool call whose arguments are not a JSON object: the round
// is no valid plan.
type argumentsError struct {
	call toolCall
	err  error
}

func (e *argumentsError) Error() string {
	return fmt.Sprintf("tool call %q (%s): arguments are not a JSON object: %v", e.call.ID, e.call.Function.Name, e.err)
}

// buildPlan turns a round of tool calls into the plan of an attempt at phase: one step
// per mapped call, with the mapping's namespace, agent and capability, the function
// name as instruction and the parsed arguments as metadata.parameters. The plan is not
// terminal: the model answers after the tools ran. Arguments that are not a JSON
// object (an empty string is taken as {}) are an *argumentsError.
func buildPlan(cfg *config.OpenAIGateway, requestID, request string, phase, attempt int, calls []toolCall, now time.Time) (*phasePlan, error) {
	notTerminal := false
	p := &phasePlan{
		plan: &engine.RoutingPlan{
			PlanID: planID(requestID, phase, attempt), OriginalRequest: request, Mode: engine.ModeAutonomous,
			Steps: make([]engine.RoutingStep, 0, len(calls)), CreatedAt: now.UTC(), Terminal: &notTerminal, PhaseNumber: phase,
		},
		calls: make(map[string]toolCall, len(calls)),
		args:  make(map[string]map[string]any, len(calls)),
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
		p.calls[sid], p.args[sid] = c, args
		p.plan.Steps = append(p.plan.Steps, engine.RoutingStep{
			StepID: sid, Namespace: id.Namespace, AgentName: id.Agent, Instruction: c.Function.Name,
			Metadata: map[string]any{
				"capability": id.Capability, "parameters": args, "function": c.Function.Name, metaToolCallID: c.ID,
			},
		})
	}
	return p, nil
}

// parseArguments decodes tool call arguments, which must be a JSON object; "" is {}.
func parseArguments(s string) (map[string]any, error) {
	if len(bytes.TrimSpace([]byte(s))) == 0 {
		return map[string]any{}, nil
	}
	var args map[string]any
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	if err := dec.Decode(&args); err != nil {
		return nil, err
	}
	if args == nil {
		return nil, fmt.Errorf("null is not an object")
	}
	if jsonread.Trailing([]byte(s), dec.InputOffset()) >= 0 {
		return nil, fmt.Errorf("the arguments go on after their JSON value")
	}
	return args, nil
}

// callFor returns the tool call an accepted step is returned to the client as: the
// round's call with that step id, its arguments re-encoded when a hook changed the
// parameters, its function the one mapped to the step's identity. A step with an
// identity no tool maps to cannot be returned (ok false).
func (p *phasePlan) callFor(cfg *config.OpenAIGateway, step engine.RoutingStep) (toolCall, bool) {
	id := config.ToolIdentity{Namespace: step.Namespace, Agent: step.AgentName, Capability: step.Capability()}
	c, known := p.calls[step.StepID]
	if !known {
		c = toolCall{ID: "call_" + step.StepID, Type: "function"}
	}
	if mapped, ok := cfg.Tool(c.Function.Name); !known || !ok || mapped != id {
		name, ok := cfg.ToolFor(id)
		if !ok {
			return toolCall{}, false
		}
		c.Function.Name = name
	}
	params := step.Parameters()
	if params == nil {
		params = map[string]any{}
	}
	if !known || !reflect.DeepEqual(params, p.args[step.StepID]) {
		data, err := json.Marshal(params)
		if err != nil {
			return toolCall{}, false
		}
		c.Function.Arguments = string(data)
	}
	if c.Type == "" {
		c.Type = "function"
	}
	return c, true
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
