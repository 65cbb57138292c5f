# Package agentd.plan reviews a RoutingPlan against an allow-list.
#
# Input:    {"plan": RoutingPlan, "phase": int, "request": string,
#            "metadata": object, "enrichments": object}
# Data:     data.agentd.allowlist         namespace -> agent -> [capability]
#           data.agentd.limits.max_steps  optional number
# Decision: data.agentd.plan is {"allow", "deny", "violations"}; the plan is
#           allowed iff deny is empty. Internal helpers are functions so they
#           never show up in the decision document.
#
# Fail closed: a missing or non-object allow-list denies every step with
# namespace_not_allowed, and an input without input.plan.steps (no plan, a plan
# that is not an object, no steps member) or with steps that are neither an
# array nor null is denied with invalid_plan. Null steps are an empty plan.
#
# The policy reads input.plan.steps and nothing else of the input, so agentd's
# decision memo keys on the steps alone: a new plan_id does not defeat it. It reads
# a step's step_id only to name the step in a violation, so an allowed plan with
# new step ids is answered from the memo too.
package agentd.plan

import data.agentd.lib

# allow is true iff no rule below produced a violation.
allow := count(deny) == 0

# violations is deny as an array sorted by step_id, then code, then message.
# A plan-level violation has no step_id and sorts as if its step_id were "".
violations := [v |
	some entry in sort([[object.get(x, "step_id", ""), x.code, x.message, x] | some x in deny])
	v := entry[3]
]

deny contains lib.plan_violation("invalid_plan", "input.plan.steps must be present") if {
	not _has_steps
}

deny contains lib.plan_violation("invalid_plan", msg) if {
	steps := input.plan.steps
	not is_array(steps)
	steps != null
	msg := sprintf("input.plan.steps must be an array, not %s", [type_name(steps)])
}

deny contains lib.plan_violation("too_many_steps", msg) if {
	limit := data.agentd.limits.max_steps
	is_number(limit)
	n := count(_steps)
	n > limit
	msg := sprintf("the plan has %d steps; at most %v are allowed", [n, limit])
}

deny contains lib.violation("missing_capability", id, msg) if {
	some step in _steps
	not lib.step_capability(step)
	id := lib.str_field(step, "step_id")
	msg := sprintf("step %q (%s/%s): metadata.capability must be a non-empty string", [
		id,
		lib.str_field(step, "namespace"),
		lib.str_field(step, "agent_name"),
	])
}

deny contains lib.violation("namespace_not_allowed", id, msg) if {
	some step in _steps
	ns := lib.str_field(step, "namespace")
	not _agents(ns)
	id := lib.str_field(step, "step_id")
	msg := sprintf("step %q: namespace %q is not in the allow-list%s", [id, ns, _allowlist_note(ns)])
}

deny contains lib.violation("agent_not_allowed", id, msg) if {
	some step in _steps
	ns := lib.str_field(step, "namespace")
	_agents(ns)
	agent := lib.str_field(step, "agent_name")
	not _capabilities(ns, agent)
	id := lib.str_field(step, "step_id")
	msg := sprintf("step %q: agent %q is not allowed in namespace %q", [id, agent, ns])
}

deny contains lib.violation("capability_not_allowed", id, msg) if {
	some step in _steps
	ns := lib.str_field(step, "namespace")
	agent := lib.str_field(step, "agent_name")
	allowed := _capabilities(ns, agent)
	capability := lib.step_capability(step)
	not capability in allowed
	id := lib.str_field(step, "step_id")
	msg := sprintf("step %q: %s is not allowed (capability %q is not in the allow-list for %s/%s)", [
		id, lib.step_identity(step), capability, ns, agent,
	])
}

# The lookups below are functions, not rules, for two reasons: they stay out
# of the decision document, and `not f(x)` is true when f's body is undefined,
# whereas `not is_object(<undefined ref>)` is itself undefined in Rego.

# _agents(ns) is the allow-list entry for namespace ns when it is an object.
_agents(ns) := agents if {
	agents := data.agentd.allowlist[ns]
	is_object(agents)
}

# _capabilities(ns, agent) is the allowed capability list for ns/agent when
# it is an array.
_capabilities(ns, agent) := caps if {
	caps := _agents(ns)[agent]
	is_array(caps)
}

# _allowlist_note(_) tells a missing allow-list apart from an unlisted
# namespace in messages. (Functions need an argument; it is ignored.)
_allowlist_note(_) := "" if {
	is_object(data.agentd.allowlist)
} else := " (no allow-list is configured at data.agentd.allowlist)"

# _steps is input.plan.steps as an array; [] when it is null; undefined otherwise.
_steps := input.plan.steps if {
	is_array(input.plan.steps)
} else := [] if {
	input.plan.steps == null
}

# _has_steps is true when input.plan.steps is defined (null and false included).
_has_steps if {
	_ = input.plan.steps
}
