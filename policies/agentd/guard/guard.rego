# Package agentd.guard is an example parameter-level guard for operation
# calls, the kind of rule plan review cannot see ("no trade above 10,000").
#
# Input:    {"call": {"operation", "request_id", "step_id", "namespace",
#                     "agent_name", "capability", "parameters"}}
# Data:     data.agentd.limits.max_trade_amount  optional number, default 10000
# Decision: data.agentd.guard is {"allow", "deny", "max_trade_amount"}; deny is
#           a set of {"code", "reason"} and the call may proceed iff it is empty.
#
# An execute_trade call whose parameters.amount is absent or not a JSON number
# is denied with invalid_amount (fail closed) instead of being let through.
package agentd.guard

# max_trade_amount is the effective limit: the configured number, or 10000
# when it is unset or not a number.
default max_trade_amount := 10000

max_trade_amount := limit if {
	limit := data.agentd.limits.max_trade_amount
	is_number(limit)
}

allow := count(deny) == 0

deny contains {"code": "trade_limit", "reason": sprintf("trades above %v need approval", [max_trade_amount])} if {
	input.call.capability == "execute_trade"
	amount := _numeric_amount(input.call)
	amount > max_trade_amount
}

deny contains {"code": "invalid_amount", "reason": "execute_trade needs a numeric parameters.amount"} if {
	input.call.capability == "execute_trade"
	not _numeric_amount(input.call)
}

# _numeric_amount(call) is call.parameters.amount when it is a number. It is a
# function so that `not _numeric_amount(...)` holds when the amount is absent.
_numeric_amount(call) := amount if {
	amount := call.parameters.amount
	is_number(amount)
}
