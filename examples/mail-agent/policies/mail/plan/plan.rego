# Package mail.plan is the mail agent's plan review: a plan may only call the
# capabilities data.mail.allowlist lists for its namespace and agent, and a
# request that has read a secret (input.labels holds "secret": a result labelled
# so was reported before this plan) may plan mail only inside the company
# (data.mail.internal_domain).
#
# Input:    {"plan": RoutingPlan, "phase", "request", "metadata", "enrichments",
#            "labels": [label], "history": [executed step]}
# Data:     data.mail.allowlist  namespace -> agent -> [capability]
#           data.mail.internal_domain  the suffix of internal addresses
# Decision: data.mail.plan is {"allow", "deny", "violations"}; agentd allows the
#           plan iff deny is empty.
#
# Fail closed: without an allow-list every step is denied, and without an
# internal domain every mail after a secret is.
package mail.plan

allow := count(deny) == 0

violations := [v |
	some entry in sort([[object.get(x, "step_id", ""), x.code, x] | some x in deny])
	v := entry[2]
]

deny contains {"code": "invalid_plan", "message": "input.plan must be an object with a steps array"} if {
	not _steps(object.get(input, "plan", null))
}

deny contains _violation("capability_not_allowed", step, msg) if {
	some step in _steps(input.plan)
	not _capability(step) in _allowed(step)
	msg := sprintf("capability %q is not allowed for %s/%s", [_capability(step), _str(step, "namespace"), _str(step, "agent_name")])
}

deny contains _violation("secret_egress", step, msg) if {
	"secret" in object.get(input, "labels", [])
	some step in _steps(input.plan)
	_capability(step) == "send_email"
	to := object.get(step.metadata, ["parameters", "to"], "")
	not _internal(to)
	msg := sprintf("the request has read a secret; mail to %q leaves the company", [to])
}

# _internal(to) holds for an address of the internal domain.
_internal(to) if {
	is_string(to)
	endswith(to, data.mail.internal_domain)
}

_violation(code, step, message) := {
	"code": code,
	"step_id": _str(step, "step_id"),
	"message": sprintf("step %q: %s", [_str(step, "step_id"), message]),
}

_steps(plan) := plan.steps if is_array(plan.steps)

_allowed(step) := caps if {
	caps := data.mail.allowlist[_str(step, "namespace")][_str(step, "agent_name")]
	is_array(caps)
} else := []

_capability(step) := c if {
	c := step.metadata.capability
	is_string(c)
} else := ""

_str(obj, key) := v if {
	v := obj[key]
	is_string(v)
} else := ""
