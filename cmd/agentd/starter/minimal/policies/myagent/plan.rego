# Package myagent.plan is this project's plan review, which the required hook of
# hooks/plan.yaml runs on every plan: each step must use a capability that
# data.myagent.allowlist (data/myagent/allowlist.json: namespace -> agent ->
# [capability]) grants its agent.
#
# Input:    {"plan": RoutingPlan, ...}; it reads input.plan.steps only.
# Decision: deny, a set of violations {"code", "step_id", "message"}; the plan is
#           accepted iff it is empty.
#
# It fails closed: a step it cannot read (a namespace, agent or capability that is
# missing or not a string) is granted nothing, and a plan without an array of steps
# is denied.
package myagent.plan

import rego.v1

deny contains {"code": "invalid_plan", "message": "input.plan.steps must be an array"} if {
	not _steps
}

deny contains {"code": "capability_not_allowed", "step_id": id, "message": msg} if {
	some i, step in _steps
	not _granted(step)
	id := _text(step, ["step_id"], sprintf("#%d", [i + 1]))
	msg := sprintf("step %s: %s/%s/%s is not in the allow-list", [
		id,
		_text(step, ["namespace"], "?"),
		_text(step, ["agent_name"], "?"),
		_text(step, ["metadata", "capability"], "?"),
	])
}

# _granted(step) is true when the allow-list grants step's agent its capability.
_granted(step) if {
	capabilities := data.myagent.allowlist[step.namespace][step.agent_name]
	is_array(capabilities)
	is_string(step.metadata.capability)
	step.metadata.capability in capabilities
}

# _steps is input.plan.steps when it is an array, [] when it is null.
_steps := input.plan.steps if {
	is_array(input.plan.steps)
} else := [] if {
	input.plan.steps == null
}

# _text(x, path, fallback) is the string at path in x, or fallback.
_text(x, path, fallback) := s if {
	s := object.get(x, path, null)
	is_string(s)
} else := fallback
