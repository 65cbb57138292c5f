# Package agentd.lib holds small, side-effect-free helpers for reviewing
# RoutingPlans and building violation objects. Every helper is a function, so
# querying data.agentd.lib never evaluates anything by itself. A helper whose
# argument lacks the field it reads is undefined rather than an error, which
# lets callers write `not lib.step_capability(step)` for "no capability".
package agentd.lib

# str_field(obj, key) is obj[key] when that value is a string, and "" when it
# is absent, null or of another type (including when obj is not an object).
str_field(obj, key) := v if {
	v := obj[key]
	is_string(v)
} else := ""

# step_capability(step) is step.metadata.capability when it is a non-empty
# string; undefined otherwise.
step_capability(step) := c if {
	c := step.metadata.capability
	is_string(c)
	c != ""
}

# step_identity(step) is "<namespace>/<agent_name>/<capability>". A missing
# part (absent, not a string, or no capability) is rendered as "".
step_identity(step) := sprintf("%s/%s/%s", [
	str_field(step, "namespace"),
	str_field(step, "agent_name"),
	_capability_or_empty(step),
])

_capability_or_empty(step) := c if {
	c := step_capability(step)
} else := ""

# param(step, name) is step.metadata.parameters[name]; undefined when absent.
param(step, name) := step.metadata.parameters[name]

# is_terminal(plan) follows RoutingPlan semantics: an absent or null
# `terminal` means true; only an explicit false makes a plan non-terminal.
is_terminal(plan) if not plan.terminal == false

# violation(code, step_id, message) builds a violation about one step.
violation(code, step_id, message) := {
	"code": code,
	"step_id": step_id,
	"message": message,
}

# plan_violation(code, message) builds a violation about the plan as a whole;
# it has no step_id.
plan_violation(code, message) := {
	"code": code,
	"message": message,
}
