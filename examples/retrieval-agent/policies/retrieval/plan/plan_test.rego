package retrieval.plan_test

import data.retrieval.plan

allowlist := {"docs": {"search": ["search", "summarize"]}}

search_step := {
	"step_id": "search",
	"agent_name": "search",
	"namespace": "docs",
	"instruction": "find the password reset article",
	"metadata": {"capability": "search", "parameters": {"query": "password reset"}},
}

summarize_step := {
	"step_id": "summarize",
	"agent_name": "search",
	"namespace": "docs",
	"instruction": "summarize the article",
	"depends_on": ["search"],
	"metadata": {"capability": "summarize"},
}

plan_input(steps) := {
	"plan": {"plan_id": "p1", "steps": steps, "phase_number": 1},
	"phase": 1,
	"request": "How do I reset my password?",
	"metadata": {"user": "alice"},
	"enrichments": {},
}

codes(vs) := {[object.get(v, "step_id", ""), v.code] | some v in vs}

test_search_and_summarize_allowed if {
	inp := plan_input([search_step, summarize_step])
	plan.allow with input as inp with data.retrieval.allowlist as allowlist
	plan.violations == [] with input as inp with data.retrieval.allowlist as allowlist
}

test_web_fetch_rejected if {
	step := json.patch(search_step, [{"op": "replace", "path": "/metadata/capability", "value": "web_fetch"}])
	inp := plan_input([step])
	vs := plan.violations with input as inp with data.retrieval.allowlist as allowlist
	codes(vs) == {["search", "capability_not_allowed"]}
	contains(vs[0].message, "web_fetch")
	not plan.allow with input as inp with data.retrieval.allowlist as allowlist
}

test_other_namespace_rejected if {
	step := object.union(search_step, {"namespace": "admin", "agent_name": "indexer", "metadata": {"capability": "reindex"}})
	vs := plan.violations with input as plan_input([summarize_step, step]) with data.retrieval.allowlist as allowlist
	codes(vs) == {["search", "namespace_not_allowed"]}
	contains(vs[0].message, "admin")
}

test_other_agent_rejected if {
	step := object.union(search_step, {"agent_name": "crawler"})
	vs := plan.violations with input as plan_input([step]) with data.retrieval.allowlist as allowlist
	codes(vs) == {["search", "agent_not_allowed"]}
}

test_missing_capability_rejected if {
	step := json.remove(search_step, ["metadata/capability"])
	vs := plan.violations with input as plan_input([step]) with data.retrieval.allowlist as allowlist
	codes(vs) == {["search", "missing_capability"]}
}

test_violations_sorted_by_step if {
	a := object.union(search_step, {"step_id": "b", "agent_name": "crawler"})
	b := object.union(summarize_step, {"step_id": "a", "namespace": "admin"})
	vs := plan.violations with input as plan_input([a, b]) with data.retrieval.allowlist as allowlist
	[v.step_id | some v in vs] == ["a", "b"]
}

test_no_allowlist_fails_closed if {
	vs := plan.violations with input as plan_input([search_step]) with data.retrieval.allowlist as null
	codes(vs) == {["search", "namespace_not_allowed"]}
}

test_no_plan_is_invalid if {
	vs := plan.violations with input as {"phase": 1} with data.retrieval.allowlist as allowlist
	codes(vs) == {["", "invalid_plan"]}
}

test_empty_plan_allowed if {
	plan.allow with input as plan_input([]) with data.retrieval.allowlist as allowlist
}

test_steps_not_an_array_is_invalid if {
	inp := {"plan": {"plan_id": "p1", "steps": "search"}}
	vs := plan.violations with input as inp with data.retrieval.allowlist as allowlist
	codes(vs) == {["", "invalid_plan"]}
}

test_step_without_namespace_fails_closed if {
	step := json.remove(search_step, ["namespace"])
	vs := plan.violations with input as plan_input([step]) with data.retrieval.allowlist as allowlist
	codes(vs) == {["search", "namespace_not_allowed"]}
}
