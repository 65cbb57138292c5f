package myagent.plan_test

import rego.v1

import data.myagent.plan

allowlist := {"my-tools": {"notes": ["search_notes"]}}

step(id, capability) := {
	"step_id": id,
	"namespace": "my-tools",
	"agent_name": "notes",
	"instruction": "find the meeting notes",
	"metadata": {"capability": capability, "parameters": {"query": "meeting"}},
}

review(steps) := vs if {
	vs := plan.deny with input as {"plan": {"plan_id": "p", "steps": steps}}
		with data.myagent.allowlist as allowlist
}

codes(vs) := {[object.get(v, "step_id", ""), v.code] | some v in vs}

test_a_granted_capability_is_allowed if {
	review([step("step-1", "search_notes")]) == set()
}

test_a_capability_the_allow_list_lacks_is_denied if {
	vs := review([step("step-1", "search_notes"), step("step-2", "delete_note")])
	codes(vs) == {["step-2", "capability_not_allowed"]}
	some v in vs
	contains(v.message, "my-tools/notes/delete_note")
}

test_another_agent_is_denied if {
	other := object.union(step("step-1", "search_notes"), {"agent_name": "mail"})
	codes(review([other])) == {["step-1", "capability_not_allowed"]}
}

test_a_step_without_a_capability_is_denied if {
	bare := object.remove(step("step-1", "search_notes"), ["metadata"])
	codes(review([bare])) == {["step-1", "capability_not_allowed"]}
}

test_a_capability_that_is_no_string_is_denied if {
	odd := object.union(step("step-1", "search_notes"), {"metadata": {"capability": ["search_notes"]}})
	codes(review([odd])) == {["step-1", "capability_not_allowed"]}
}

test_without_an_allow_list_every_step_is_denied if {
	vs := plan.deny with input as {"plan": {"steps": [step("step-1", "search_notes")]}}
		with data.myagent.allowlist as null
	codes(vs) == {["step-1", "capability_not_allowed"]}
}

test_a_plan_without_steps_is_denied if {
	vs := plan.deny with input as {"plan": {"plan_id": "p"}}
	codes(vs) == {["", "invalid_plan"]}
}

test_null_steps_are_an_empty_plan if {
	review(null) == set()
}
