package agentd.lib_test

import data.agentd.lib

step := {
	"step_id": "step-1",
	"agent_name": "stock-service",
	"namespace": "demo-tools",
	"metadata": {"capability": "stock_quote", "parameters": {"symbol": "AAPL", "qty": 0}},
}

test_str_field if {
	lib.str_field(step, "namespace") == "demo-tools"
	lib.str_field(step, "absent") == ""
	lib.str_field({"n": 3}, "n") == ""
	lib.str_field("not an object", "n") == ""
}

test_step_capability if {
	lib.step_capability(step) == "stock_quote"
	not lib.step_capability({"metadata": {}})
	not lib.step_capability({"metadata": {"capability": ""}})
	not lib.step_capability({"metadata": {"capability": ["stock_quote"]}})
	not lib.step_capability({})
}

test_step_identity if {
	lib.step_identity(step) == "demo-tools/stock-service/stock_quote"
	lib.step_identity({"namespace": "ns", "agent_name": "a"}) == "ns/a/"
}

test_param if {
	lib.param(step, "symbol") == "AAPL"
	lib.param(step, "qty") == 0
	not lib.param(step, "absent")
	not lib.param({"metadata": {}}, "symbol")
}

test_is_terminal if {
	lib.is_terminal({})
	lib.is_terminal({"terminal": null})
	lib.is_terminal({"terminal": true})
	not lib.is_terminal({"terminal": false})
}

test_violation if {
	lib.violation("agent_not_allowed", "step-1", "m") == {"code": "agent_not_allowed", "step_id": "step-1", "message": "m"}
}

test_plan_violation if {
	lib.plan_violation("too_many_steps", "m") == {"code": "too_many_steps", "message": "m"}
}
