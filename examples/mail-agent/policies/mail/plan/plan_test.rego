package mail.plan_test

import data.mail.plan

allowlist := {"office": {"assistant": ["read_secret", "fetch_url", "send_email", "update_settings"]}}

step(id, capability, params) := {
	"step_id": id,
	"agent_name": "assistant",
	"namespace": "office",
	"instruction": capability,
	"metadata": {"capability": capability, "parameters": params},
}

plan_input(steps, labels) := {
	"plan": {"plan_id": "p", "steps": steps},
	"phase": 2,
	"request": "mail the report",
	"metadata": {},
	"enrichments": {},
	"labels": labels,
	"history": [],
}

codes(inp) := {[v.step_id, v.code] |
	vs := plan.violations with input as inp with data.mail.allowlist as allowlist with data.mail.internal_domain as "@acme.example"
	some v in vs
}

test_mail_without_a_secret_allowed if {
	inp := plan_input([step("step-1", "send_email", {"to": "bob@example.com"})], ["untrusted"])
	plan.allow with input as inp with data.mail.allowlist as allowlist with data.mail.internal_domain as "@acme.example"
}

test_external_mail_after_a_secret_denied if {
	inp := plan_input([step("step-2", "send_email", {"to": "x@evil.example"})], ["secret"])
	codes(inp) == {["step-2", "secret_egress"]}
}

test_internal_mail_after_a_secret_allowed if {
	inp := plan_input([step("step-2", "send_email", {"to": "ops@acme.example"})], ["secret"])
	plan.allow with input as inp with data.mail.allowlist as allowlist with data.mail.internal_domain as "@acme.example"
}

test_mail_without_an_address_after_a_secret_denied if {
	inp := plan_input([step("step-2", "send_email", {})], ["secret"])
	codes(inp) == {["step-2", "secret_egress"]}
}

test_without_an_internal_domain_every_mail_after_a_secret_denied if {
	inp := plan_input([step("step-2", "send_email", {"to": "ops@acme.example"})], ["secret"])
	not plan.allow with input as inp with data.mail.allowlist as allowlist with data.mail.internal_domain as null
}

test_unknown_capability_denied if {
	inp := plan_input([step("step-1", "delete_mailbox", {})], [])
	codes(inp) == {["step-1", "capability_not_allowed"]}
}

test_no_plan_denied if {
	not plan.allow with input as {"labels": []} with data.mail.allowlist as allowlist with data.mail.internal_domain as "@acme.example"
}

test_no_labels_member_is_no_secret if {
	inp := object.remove(plan_input([step("step-1", "send_email", {"to": "x@evil.example"})], []), ["labels"])
	plan.allow with input as inp with data.mail.allowlist as allowlist with data.mail.internal_domain as "@acme.example"
}
