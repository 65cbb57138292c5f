package agentd.plan_test

import data.agentd.plan

allowlist := {"demo-tools": {
	"stock-service": ["stock_quote"],
	"news-service": ["headlines", "summary"],
}}

quote_step := {
	"step_id": "step-1",
	"agent_name": "stock-service",
	"namespace": "demo-tools",
	"instruction": "Get the AAPL quote",
	"depends_on": [],
	"metadata": {"capability": "stock_quote", "parameters": {"symbol": "AAPL"}},
}

trade_step := {
	"step_id": "step-2",
	"agent_name": "stock-service",
	"namespace": "demo-tools",
	"instruction": "Buy 10 AAPL",
	"depends_on": ["step-1"],
	"metadata": {"capability": "execute_trade", "parameters": {"symbol": "AAPL", "amount": 10}},
}

plan_input(steps) := {
	"plan": {"plan_id": "plan-1", "steps": steps, "phase_number": 1},
	"phase": 1,
	"request": "AAPL?",
	"metadata": {},
	"enrichments": {},
}

codes(vs) := {[object.get(v, "step_id", ""), v.code] | some v in vs}

test_stock_quote_allowed if {
	plan.allow with input as plan_input([quote_step]) with data.agentd.allowlist as allowlist
	count(plan.deny) == 0 with input as plan_input([quote_step]) with data.agentd.allowlist as allowlist
	plan.violations == [] with input as plan_input([quote_step]) with data.agentd.allowlist as allowlist
}

test_execute_trade_rejected if {
	vs := plan.violations with input as plan_input([quote_step, trade_step]) with data.agentd.allowlist as allowlist
	count(vs) == 1
	vs[0].code == "capability_not_allowed"
	vs[0].step_id == "step-2"
	contains(vs[0].message, "step-2")
	contains(vs[0].message, "demo-tools/stock-service/execute_trade")
	not plan.allow with input as plan_input([quote_step, trade_step]) with data.agentd.allowlist as allowlist
}

test_unknown_namespace if {
	step := object.union(quote_step, {"namespace": "shadow-tools"})
	vs := plan.violations with input as plan_input([step]) with data.agentd.allowlist as allowlist
	codes(vs) == {["step-1", "namespace_not_allowed"]}
	contains(vs[0].message, "shadow-tools")
	contains(vs[0].message, "step-1")
}

test_unknown_agent if {
	step := object.union(quote_step, {"agent_name": "crypto-service"})
	vs := plan.violations with input as plan_input([step]) with data.agentd.allowlist as allowlist
	codes(vs) == {["step-1", "agent_not_allowed"]}
	contains(vs[0].message, "crypto-service")
	contains(vs[0].message, "demo-tools")
}

test_missing_capability if {
	step := json.remove(quote_step, ["metadata/capability"])
	vs := plan.violations with input as plan_input([step]) with data.agentd.allowlist as allowlist
	codes(vs) == {["step-1", "missing_capability"]}
	contains(vs[0].message, "step-1")
}

test_empty_or_non_string_capability_is_missing if {
	empty := json.patch(quote_step, [{"op": "replace", "path": "/metadata/capability", "value": ""}])
	number := json.patch(quote_step, [
		{"op": "replace", "path": "/step_id", "value": "step-2"},
		{"op": "replace", "path": "/metadata/capability", "value": 7},
	])
	vs := plan.violations with input as plan_input([empty, number]) with data.agentd.allowlist as allowlist
	codes(vs) == {["step-1", "missing_capability"], ["step-2", "missing_capability"]}
}

test_missing_capability_is_reported_with_unknown_namespace if {
	step := {"step_id": "step-1", "namespace": "other", "agent_name": "x", "metadata": {}}
	vs := plan.violations with input as plan_input([step]) with data.agentd.allowlist as allowlist
	codes(vs) == {["step-1", "missing_capability"], ["step-1", "namespace_not_allowed"]}
}

test_empty_plan_allowed if {
	plan.allow with input as plan_input([]) with data.agentd.allowlist as allowlist
}

test_null_steps_is_an_empty_plan if {
	plan.allow with input as {"plan": {"plan_id": "p", "steps": null}} with data.agentd.allowlist as allowlist
}

test_absent_steps_is_invalid if {
	vs := plan.violations with input as {"plan": {"plan_id": "p"}} with data.agentd.allowlist as allowlist
	codes(vs) == {["", "invalid_plan"]}
}

test_multi_step_plan_with_one_bad_step if {
	news := object.union(quote_step, {"step_id": "step-2", "agent_name": "news-service", "metadata": {"capability": "headlines"}})
	bad := object.union(quote_step, {"step_id": "step-3", "agent_name": "news-service", "metadata": {"capability": "delete_all"}})
	summary := object.union(quote_step, {"step_id": "step-4", "agent_name": "news-service", "metadata": {"capability": "summary"}})
	vs := plan.violations with input as plan_input([quote_step, news, bad, summary]) with data.agentd.allowlist as allowlist
	count(vs) == 1
	vs[0].code == "capability_not_allowed"
	vs[0].step_id == "step-3"
}

# An absent allow-list reads as undefined and a null one as a non-object: both deny.
# The test replaces it with null, so it holds with or without the data documents loaded
# (opa test policies/ and opa test policies/ data/).
test_missing_allowlist_denies_every_step if {
	vs := plan.violations with input as plan_input([quote_step, trade_step]) with data.agentd.allowlist as null
	codes(vs) == {["step-1", "namespace_not_allowed"], ["step-2", "namespace_not_allowed"]}
	contains(vs[0].message, "no allow-list")
}

test_non_object_allowlist_denies_every_step if {
	vs := plan.violations with input as plan_input([quote_step]) with data.agentd.allowlist as ["demo-tools"]
	codes(vs) == {["step-1", "namespace_not_allowed"]}
}

test_empty_allowlist_denies_every_step if {
	vs := plan.violations with input as plan_input([quote_step]) with data.agentd.allowlist as {}
	codes(vs) == {["step-1", "namespace_not_allowed"]}
}

test_malformed_allowlist_entries_fail_closed if {
	bad := {"demo-tools": {"stock-service": "stock_quote"}, "other": ["x"]}
	vs := plan.violations with input as plan_input([quote_step]) with data.agentd.allowlist as bad
	codes(vs) == {["step-1", "agent_not_allowed"]}
	other := object.union(quote_step, {"namespace": "other"})
	vs2 := plan.violations with input as plan_input([other]) with data.agentd.allowlist as bad
	codes(vs2) == {["step-1", "namespace_not_allowed"]}
}

test_max_steps_exceeded if {
	steps := [object.union(quote_step, {"step_id": sprintf("step-%d", [i])}) | some i in numbers.range(1, 3)]
	vs := plan.violations with input as plan_input(steps)
		with data.agentd.allowlist as allowlist
		with data.agentd.limits.max_steps as 2
	count(vs) == 1
	vs[0].code == "too_many_steps"
	not "step_id" in object.keys(vs[0])
	contains(vs[0].message, "3 steps")
}

test_max_steps_at_limit_allowed if {
	steps := [object.union(quote_step, {"step_id": sprintf("step-%d", [i])}) | some i in numbers.range(1, 2)]
	plan.allow with input as plan_input(steps)
		with data.agentd.allowlist as allowlist
		with data.agentd.limits.max_steps as 2
}

test_max_steps_unset_or_not_a_number_is_ignored if {
	steps := [object.union(quote_step, {"step_id": sprintf("step-%d", [i])}) | some i in numbers.range(1, 5)]
	plan.allow with input as plan_input(steps) with data.agentd.allowlist as allowlist
	plan.allow with input as plan_input(steps)
		with data.agentd.allowlist as allowlist
		with data.agentd.limits.max_steps as "2"
}

test_missing_plan_is_invalid if {
	vs := plan.violations with input as {"phase": 1} with data.agentd.allowlist as allowlist
	codes(vs) == {["", "invalid_plan"]}
	every bad in [null, false, "plan-1", [quote_step]] {
		codes(plan.violations) == {["", "invalid_plan"]} with input as {"plan": bad} with data.agentd.allowlist as allowlist
	}
}

test_non_array_steps_is_invalid if {
	vs := plan.violations with input as {"plan": {"plan_id": "p", "steps": {"a": 1}}} with data.agentd.allowlist as allowlist
	codes(vs) == {["", "invalid_plan"]}
	contains(vs[0].message, "not object")
}

test_violations_sorted_by_step_id_then_code if {
	s1 := {"step_id": "step-b", "namespace": "nope", "agent_name": "a", "metadata": {}}
	s2 := object.union(quote_step, {"step_id": "step-a", "agent_name": "ghost"})
	steps := [s1, s2, quote_step]
	vs := plan.violations with input as plan_input(steps)
		with data.agentd.allowlist as allowlist
		with data.agentd.limits.max_steps as 1
	[[object.get(v, "step_id", ""), v.code] | some v in vs] == [
		["", "too_many_steps"],
		["step-a", "agent_not_allowed"],
		["step-b", "missing_capability"],
		["step-b", "namespace_not_allowed"],
	]
}

# From agentd probe's override_step_metadata and override_request_metadata mutations:
# members that look like overrides, on the plan, the step, its metadata and parameters
# and the request metadata, never allow a step the allow-list denies.
test_override_members_do_not_allow if {
	overrides := {"allow": true, "approved": true, "override": true}
	step := json.patch(trade_step, [
		{"op": "replace", "path": "/depends_on", "value": []},
		{"op": "add", "path": "/allow", "value": true},
		{"op": "add", "path": "/approved", "value": true},
		{"op": "replace", "path": "/metadata", "value": object.union(overrides, {
			"capability": "execute_trade",
			"parameters": overrides,
		})},
	])
	review := object.union(plan_input([step]), {
		"plan": object.union(plan_input([step]).plan, overrides),
		"metadata": object.union(overrides, {"admin": true, "role": "admin"}),
	})
	vs := plan.violations with input as review with data.agentd.allowlist as allowlist
	codes(vs) == {["step-2", "capability_not_allowed"]}
	not plan.allow with input as review with data.agentd.allowlist as allowlist
}

# From agentd probe's identity_case and identity_confusable mutations: an identity
# matches the allow-list exactly, so a capital letter, a Cyrillic homoglyph or fullwidth
# letters name another, denied, operation.
test_identity_variants_are_not_the_allowed_identity if {
	every capability in ["Stock_quote", "STOCK_QUOTE", "stоck_quote", "ｓｔｏｃｋ＿ｑｕｏｔｅ", " stock_quote"] {
		step := object.union(quote_step, {"metadata": {"capability": capability}})
		vs := plan.violations with input as plan_input([step]) with data.agentd.allowlist as allowlist
		codes(vs) == {["step-1", "capability_not_allowed"]}
	}
}
