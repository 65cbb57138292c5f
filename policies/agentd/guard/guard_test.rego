package agentd.guard_test

import data.agentd.guard

trade(amount) := {"call": {
	"operation": "tool_call",
	"request_id": "req-1",
	"step_id": "step-2",
	"namespace": "demo-tools",
	"agent_name": "stock-service",
	"capability": "execute_trade",
	"parameters": {"symbol": "AAPL", "amount": amount},
}}

test_trade_under_limit_allowed if {
	guard.allow with input as trade(9999.99)
	count(guard.deny) == 0 with input as trade(500)
}

test_trade_at_limit_allowed if {
	guard.allow with input as trade(10000)
}

test_trade_over_limit_denied if {
	guard.deny == {{"code": "trade_limit", "reason": "trades above 10000 need approval"}} with input as trade(10000.01)
	not guard.allow with input as trade(25000)
}

test_default_limit if {
	guard.max_trade_amount == 10000
	guard.max_trade_amount == 10000 with data.agentd.limits.max_trade_amount as "lots"
}

test_custom_limit if {
	guard.max_trade_amount == 500 with data.agentd.limits.max_trade_amount as 500
	guard.allow with input as trade(500) with data.agentd.limits.max_trade_amount as 500
	guard.deny == {{"code": "trade_limit", "reason": "trades above 500 need approval"}} with input as trade(501)
		with data.agentd.limits.max_trade_amount as 500
	guard.allow with input as trade(20000) with data.agentd.limits.max_trade_amount as 50000
}

test_non_numeric_amount_denied if {
	guard.deny == {{"code": "invalid_amount", "reason": "execute_trade needs a numeric parameters.amount"}} with input as trade("20000")
	inp := json.remove(trade(1), ["call/parameters/amount"])
	{d.code | some d in guard.deny} == {"invalid_amount"} with input as inp
}

test_other_capabilities_ignored if {
	quote := json.patch(trade(1000000), [{"op": "replace", "path": "/call/capability", "value": "stock_quote"}])
	guard.allow with input as quote
	guard.allow with input as {"call": {"operation": "inference", "request_id": "req-1", "model": "m", "phase": 1}}
}
