# Package retrieval.plan is the retrieval agent's plan allow-list: a plan may
# only call capabilities listed for its namespace and agent in
# data.retrieval.allowlist (data/retrieval/allowlist.json), i.e. docs/search
# with search and summarize.
#
# Input:    {"plan": RoutingPlan, "phase", "request", "metadata", "enrichments"}
# Data:     data.retrieval.allowlist  namespace -> agent -> [capability]
# Decision: data.retrieval.plan is {"allow", "deny", "violations"}; agentd
#           allows the plan iff deny is empty. Helpers are functions, so they
#           stay out of the decision document.
#
# Fail closed: without an allow-list every step is denied, a step without a
# string namespace or agent_name is denied like an unknown one, and an input
# without a plan object is denied with invalid_plan.
package retrieval.plan

# allow is true iff no rule below produced a violation.
allow := count(deny) == 0

# violations is deny as an array sorted by step_id, then code.
violations := [v |
	some entry in sort([[object.get(x, "step_id", ""), x.code, x] | some x in deny])
	v := entry[2]
]

deny contains {"code": "invalid_plan", "message": "input.plan must be an object with a steps array"} if {
	not _steps(object.get(input, "plan", null))
}

deny contains _violation("namespace_not_allowed", step, msg) if {
	some step in _steps(input.plan)
	not _agents(_str(step, "namespace"))
	msg := sprintf("namespace %q is not in the allow-list", [_str(step, "namespace")])
}

deny contains _violation("agent_not_allowed", step, msg) if {
	some step in _steps(input.plan)
	_agents(_str(step, "namespace"))
	not _capabilities(step)
	msg := sprintf("agent %q is not allowed in namespace %q", [_str(step, "agent_name"), _str(step, "namespace")])
}

deny contains _violation("capability_not_allowed", step, msg) if {
	some step in _steps(input.plan)
	allowed := _capabilities(step)
	capability := _capability(step)
	not capability in allowed
	msg := sprintf("capability %q is not allowed for %s/%s (allowed: %s)", [
		capability, _str(step, "namespace"), _str(step, "agent_name"), concat(", ", allowed),
	])
}

deny contains _violation("missing_capability", step, "metadata.capability must be a non-empty string") if {
	some step in _steps(input.plan)
	not _capability(step)
}

# _violation(code, step, message) is a violation about one step.
_violation(code, step, message) := {
	"code": code,
	"step_id": _str(step, "step_id"),
	"message": sprintf("step %q: %s", [_str(step, "step_id"), message]),
}

# _steps(plan) is plan.steps when it is an array; undefined otherwise (also
# for a plan that is not an object).
_steps(plan) := plan.steps if is_array(plan.steps)

# _agents(ns) is the allow-list entry of namespace ns when it is an object.
_agents(ns) := agents if {
	agents := data.retrieval.allowlist[ns]
	is_object(agents)
}

# _capabilities(step) is the allowed capability list of the step's agent.
_capabilities(step) := caps if {
	caps := _agents(_str(step, "namespace"))[_str(step, "agent_name")]
	is_array(caps)
}

# _capability(step) is step.metadata.capability when it is a non-empty string.
_capability(step) := c if {
	c := step.metadata.capability
	is_string(c)
	c != ""
}

# _str(obj, key) is obj[key] when it is a string, else "".
_str(obj, key) := v if {
	v := obj[key]
	is_string(v)
} else := ""
